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
