package main

import (
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestCleanReadOnlyMappings(t *testing.T) {
	const exe = "/opt/my tools/kapi"
	smaps := `00400000-02379000 r-xp 00000000 fe:00 9978379                            /opt/my tools/kapi
Size:              32228 kB
Rss:               23652 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me dw sd
02379000-0470c000 r--p 01f79000 fe:00 9978379                            /opt/my tools/kapi
Rss:               22284 kB
Anonymous:             0 kB
0470c000-047fc000 rw-p 0430c000 fe:00 9978379                            /opt/my tools/kapi
Rss:                 896 kB
Anonymous:           512 kB
04800000-04900000 r--p 04400000 fe:00 9978379                            /opt/my tools/kapi
Rss:                  64 kB
Anonymous:             8 kB
7fb0907a2000-7fb0908f8000 r-xp 00026000 fe:00 326269                     /usr/lib/x86_64-linux-gnu/libc.so.6
Rss:                 824 kB
Anonymous:             0 kB
7fb048010000-7fb0482f0000 rw-p 00000000 00:00 0 
Rss:                2544 kB
Anonymous:          2544 kB
7fff00000000-7fff00001000 r--p 00000000 fe:00 9978379                            /opt/my tools/kapi (deleted)
Rss:                   4 kB
Anonymous:             0 kB
7fff00002000-7fff00003000 r--p 00000000 fe:00 9978379                            /opt/my tools/kapi
Rss:                   4 kB
`
	got := cleanReadOnlyMappings([]byte(smaps), exe)
	want := []mapping{
		{start: 0x00400000, end: 0x02379000, residentKiB: 23652},
		{start: 0x02379000, end: 0x0470c000, residentKiB: 22284},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v (the writable mapping, the one with pages copied on write, the one smaps gives no Anonymous line for, other files' and anonymous ones are not the binary's clean read-only pages)", got, want)
	}
}

// After the release the binary's code is mapped again as it runs: the
// process goes on, with fewer of the binary's pages resident.
func TestReleaseStartupPages(t *testing.T) {
	before := residentFileKiB(t)
	released, err := releaseStartupPages()
	if err != nil {
		t.Fatal(err)
	}
	after := residentFileKiB(t)
	if released <= 0 || after >= before {
		t.Errorf("released %d KiB, file-backed resident %d KiB before, %d KiB after", released, before, after)
	}
	if got := strings.Repeat("ab", 2); got != "abab" { // code runs again
		t.Errorf("strings.Repeat after the release: %q", got)
	}
}

func residentFileKiB(t *testing.T) int64 {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "RssFile:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kib
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}
