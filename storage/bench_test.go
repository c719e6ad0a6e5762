package storage

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// BenchmarkCreate measures the store's own write path (no HTTP, no
// encoding) for ~1 KiB objects: `go test -bench Create ./storage/`.
func BenchmarkCreate(b *testing.B) {
	pad := strings.Repeat("x", 1000)
	for _, durable := range []bool{false, true} {
		for _, writers := range []int{1, 32} {
			name := fmt.Sprintf("sync=%s/writers=%d", map[bool]string{false: "normal", true: "full"}[durable], writers)
			b.Run(name, func(b *testing.B) {
				s, err := Open(context.Background(), Options{Path: filepath.Join(b.TempDir(), "kapi.db"), Durable: durable})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				var n atomic.Int64
				b.SetParallelism(writers)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						i := n.Add(1)
						key := Key{Resource: "g/things", Namespace: "default", Name: fmt.Sprint("obj-", i)}
						if _, err := s.Create(context.Background(), key, func(rev int64) ([]byte, error) {
							return fmt.Appendf(nil, `{"rev":%d,"pad":%q}`, rev, pad), nil
						}); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}

// BenchmarkChangesFromOldRevision reads the first page of a watch resumed
// from the start of a long history: 10,000 changes of the resource among
// 20,000 (the page's revisions come from the key index; its rows after).
func BenchmarkChangesFromOldRevision(b *testing.B) {
	s := newFileStore(b)
	ctx := context.Background()
	data := []byte(`{"d":"` + strings.Repeat("x", 2000) + `"}`)
	for i := range 20000 {
		res := []string{"/a", "/b"}[i%2]
		if _, err := s.Create(ctx, Key{Resource: res, Namespace: "ns", Name: fmt.Sprintf("o%d", i)}, func(int64) ([]byte, error) { return data, nil }); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		if evs, err := s.Changes(ctx, "/a", 1, 500); err != nil || len(evs) != 500 {
			b.Fatal(err, len(evs))
		}
	}
}
