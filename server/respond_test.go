package server

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A response over 128 KiB to a client that takes gzip is compressed, as
// kube-apiserver compresses it, unless the client is on a loopback address;
// a smaller one, or one to a client that does not name gzip exactly, is not.
func TestLargeResponsesCompressed(t *testing.T) {
	big := json.RawMessage(`{"items":["` + strings.Repeat("x", 130*1024) + `"]}`)
	small := json.RawMessage(`{"items":[]}`)
	for _, c := range []struct {
		what, remote, encoding string
		body                   json.RawMessage
		gzipped                bool
	}{
		{"a large response to a remote client taking gzip", "192.0.2.1:1234", "deflate, gzip", big, true},
		{"to IPv6", "[2001:db8::1]:1234", "gzip", big, true},
		{"to a loopback client", "127.0.0.1:1234", "gzip", big, false},
		{"to IPv6 loopback", "[::1]:1234", "gzip", big, false},
		{"to a client not taking gzip", "192.0.2.1:1234", "", big, false},
		{"to gzip;q=0", "192.0.2.1:1234", "gzip;q=0", big, false},
		{"a small response", "192.0.2.1:1234", "gzip", small, false},
	} {
		r := httptest.NewRequest(http.MethodGet, "/apis/example.com/v1/things", nil)
		r.RemoteAddr = c.remote
		if c.encoding != "" {
			r.Header.Set("Accept-Encoding", c.encoding)
		}
		w := httptest.NewRecorder()
		writeObject(w, r, output{}, http.StatusOK, c.body)
		body := w.Body.Bytes()
		if got := w.Header().Get("Content-Encoding") == "gzip"; got != c.gzipped {
			t.Errorf("%s: Content-Encoding %q, want gzip %v", c.what, w.Header().Get("Content-Encoding"), c.gzipped)
			continue
		}
		if c.gzipped {
			if w.Header().Get("Vary") != "Accept-Encoding" || w.Header().Get("Content-Length") != "" {
				t.Errorf("%s: Vary %q Content-Length %q, want Accept-Encoding and none", c.what, w.Header().Get("Vary"), w.Header().Get("Content-Length"))
			}
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			if body, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
		}
		if want := append(append([]byte{}, c.body...), '\n'); !bytes.Equal(body, want) {
			t.Errorf("%s: body of %d bytes, want the %d sent", c.what, len(body), len(want))
		}
	}
}
