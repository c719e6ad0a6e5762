package main

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// releaseStartupPages drops this process's mappings of the pages of its
// own binary that are read-only (code, constants, the runtime's function
// tables), and returns how many KiB were resident in them.
//
// Go runs every linked package's initialisation before main: kapi's ~450
// library packages' init functions, spread across the whole binary, map
// 30–40 MiB of it (the kernel maps the 64 KiB around each page touched),
// and the start-up code that builds the schemes and caches once maps more.
// None of it runs again, yet it stays resident. Once kapi serves, only the
// pages it touches again are mapped back, from the page cache (the pages
// released stay cached; the kernel can reclaim them). The pages are
// clean: a read-only private mapping of the file with no page copied on
// write (a PIE binary's relocated read-only data has such copies and is
// left alone) reads the same from the file again.
func releaseStartupPages() (residentKiB int64, err error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, err
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	for _, m := range cleanReadOnlyMappings(smaps, exe) {
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, m.start, m.end-m.start, syscall.MADV_DONTNEED); errno != 0 {
			return residentKiB, errno
		}
		residentKiB += m.residentKiB
	}
	return residentKiB, nil
}

// mapping is one address range of /proc/<pid>/smaps.
type mapping struct {
	start, end  uintptr
	residentKiB int64
}

// cleanReadOnlyMappings reads /proc/<pid>/smaps text: the mappings of the
// file at path that are read-only and private (r-xp, r--p) and that smaps
// says hold no anonymous page.
func cleanReadOnlyMappings(smaps []byte, path string) []mapping {
	var found []mapping
	var cur *mapping // the current mapping, while it qualifies
	var clean bool   // its Anonymous line said 0 kB
	flush := func() {
		if cur != nil && clean {
			found = append(found, *cur)
		}
		cur, clean = nil, false
	}
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	for sc.Scan() {
		line := sc.Text()
		key, value, _ := strings.Cut(line, " ")
		if !strings.HasSuffix(key, ":") { // a mapping's header line
			flush()
			m, perms, file, ok := parseMappingHeader(line)
			if ok && file == path && (perms == "r-xp" || perms == "r--p") {
				cur = &m
			}
			continue
		}
		if cur == nil {
			continue
		}
		kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		switch key {
		case "Rss:":
			if err == nil {
				cur.residentKiB = kib
			}
		case "Anonymous:":
			clean = err == nil && kib == 0
		}
	}
	flush()
	return found
}

// parseMappingHeader reads "start-end perms offset dev inode path".
func parseMappingHeader(line string) (m mapping, perms, path string, ok bool) {
	var fields [5]string
	rest := line
	for i := range fields {
		rest = strings.TrimLeft(rest, " ")
		fields[i], rest, _ = strings.Cut(rest, " ")
	}
	path = strings.TrimLeft(rest, " ")
	lo, hi, found := strings.Cut(fields[0], "-")
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	if !found || err1 != nil || err2 != nil || end <= start {
		return mapping{}, "", "", false
	}
	return mapping{start: uintptr(start), end: uintptr(end)}, fields[1], path, true
}
