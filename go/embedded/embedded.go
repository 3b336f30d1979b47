// Package embedded carries the tumbler server binary inside the Go module (//go:embed),
// the way the wheel and the npm package do, so that `go get` alone is enough:
//
//	import _ "tumbler.dev/tumbler/embedded"
//
// With that blank import, tumbler.Run uses the embedded binary when neither WithBinary nor
// $TUMBLER_BINARY names one. On first use it is written once to the user cache directory
// (…/tumbler-go/<hash>/tumbler) and run from there.
//
// The binary is the static Linux x86-64 build (scripts/static-build.sh); go/embedded/build.sh
// copies it into bin/ before the module is built or published. A copy of the module
// without it compiles, and Path reports the missing binary.
package embedded

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"tumbler.dev/tumbler"
)

//go:embed bin
var files embed.FS

func init() { tumbler.RegisterBinary(Path) }

var (
	once    sync.Once
	path    string
	pathErr error
)

// Path writes the embedded binary to the user cache directory once and returns its path.
func Path() (string, error) {
	once.Do(func() { path, pathErr = extract() })
	return path, pathErr
}

func extract() (string, error) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		return "", fmt.Errorf("the embedded binary is for linux/amd64, not %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	data, err := fs.ReadFile(files, "bin/tumbler")
	if errors.Is(err, fs.ErrNotExist) {
		return "", errors.New("this copy of tumbler.dev/tumbler/embedded was built without the binary (go/embedded/build.sh puts it in)")
	}
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "tumbler-go", hex.EncodeToString(sum[:8]))
	dst := filepath.Join(dir, "tumbler")
	if st, err := os.Stat(dst); err == nil && st.Size() == int64(len(data)) && st.Mode()&0o111 != 0 {
		return dst, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, "tumbler-*.tmp")
	if err != nil {
		return "", err
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp.Name(), 0o755)
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), dst) // atomic: parallel test binaries may race here
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
		return "", werr
	}
	return dst, nil
}
