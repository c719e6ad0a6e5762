package server

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestReadAtMost(t *testing.T) {
	body := strings.Repeat("x", 100)
	for _, tc := range []struct {
		name          string
		contentLength int64
		limit         int64
		want          string
		err           error
	}{
		{"as announced", 100, 1000, body, nil},
		{"no length (chunked)", -1, 1000, body, nil},
		{"longer than announced", 60, 1000, body, nil},
		{"shorter than announced", 150, 1000, "", io.ErrUnexpectedEOF},
		{"over the limit, announced", 100, 50, body[:50], nil},
		{"over the limit, unannounced", -1, 50, body[:50], nil},
	} {
		got, err := readAtMost(bytes.NewReader([]byte(body)), tc.contentLength, tc.limit)
		if !errors.Is(err, tc.err) || (tc.err == nil && string(got) != tc.want) {
			t.Errorf("%s: %d bytes, %v; want %d bytes, %v", tc.name, len(got), err, len(tc.want), tc.err)
		}
	}
}
