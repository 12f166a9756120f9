package manifest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf16"
)

// MaxInputBytes bounds the inputs of one run (files and stdin) together: one -f or many, they add up. The largest
// object the API server stores is 1.5 MiB, and kubectl get -A -o yaml of a large cluster's budgets and spend stays
// far below the bound; reading stops at it rather than holding an unbounded input in memory.
const MaxInputBytes = 64 << 20

// maxInputBytes is MaxInputBytes, lowered by tests.
var maxInputBytes int64 = MaxInputBytes

// Input is one file (or stdin) to read.
type Input struct {
	Name  string
	InDir bool // found by walking a directory given with -f, rather than named
	data  []byte
	text  io.Reader // a file's UTF-8 text, read as it is parsed rather than held whole; nil for data
}

// Text is the input as UTF-8, whatever the file's encoding was. It can be read once.
func (in Input) Text() io.Reader {
	if in.text != nil {
		return in.text
	}
	return bytes.NewReader(in.data)
}

// SkippedFile is a file a directory held that was not read, and why.
type SkippedFile struct {
	Path, Why string
}

// ReadInputs calls read with every named input, once however often it is named, and stops at the first error.
// "-" is stdin, named "stdin": a second "-" is refused, as it would silently read nothing. A directory stands for
// the .yaml, .yml and .json files in it and its subdirectories, in lexical order, as kubectl apply -R -f reads
// them; it returns the other files (and hidden directories) it passed over.
func ReadInputs(names []string, stdin io.Reader, read func(Input) error) ([]SkippedFile, error) {
	return readInputs(names, stdin, nil, read)
}

// readInputs is ReadInputs without the files and directories that the globs exclude match (see Options).
func readInputs(names []string, stdin io.Reader, exclude []string, read func(Input) error) ([]SkippedFile, error) {
	readStdin := false
	left := maxInputBytes // of MaxInputBytes, for the inputs still to read
	seen := map[string]bool{}
	var skipped []SkippedFile
	for _, name := range names {
		files, skip, err := manifestFiles(name, exclude)
		skipped = append(skipped, skip...)
		if err != nil {
			return skipped, err
		}
		for _, f := range files {
			if f != "-" && seen[filepath.Clean(f)] { // named and in a directory named: one file, read once
				continue
			}
			seen[filepath.Clean(f)] = true
			in := Input{Name: f, InDir: f != name}
			var r io.Reader
			if f == "-" {
				if readStdin {
					return skipped, errors.New("-f - given twice: stdin can be read only once")
				}
				readStdin, in.Name, r = true, "stdin", stdin
			} else {
				n, err := openInput(&in, f, left)
				if err != nil {
					return skipped, err
				}
				left -= n
			}
			if r != nil {
				if in.data, err = readInput(in.Name, r, left); err != nil {
					return skipped, err
				}
				left -= int64(len(in.data))
			}
			err := read(in)
			if c, ok := in.text.(io.Closer); ok {
				c.Close()
			}
			if err != nil {
				return skipped, err
			}
		}
	}
	return skipped, nil
}

// openInput opens the file at path for in and returns its size. A file in UTF-8 is checked as toUTF8 checks it,
// a buffer at a time, and then read again as it is parsed: held whole, the input would stay in memory beside
// every object read from it. Another encoding is read whole and transcoded.
func openInput(in *Input, path string, left int64) (int64, error) {
	file, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	info, err := file.Stat()
	if err == nil && info.Size() > left {
		file.Close()
		return 0, tooLarge(in.Name, left < maxInputBytes)
	}
	whole := err != nil || !info.Mode().IsRegular() // a pipe (<(kubectl get ...)) is read once
	var size, bom int64
	if !whole {
		size, bom, err = checkUTF8(in.Name, file, left)
		whole = err == nil && bom < 0 // another encoding
		if err == nil && whole {
			_, err = file.Seek(0, io.SeekStart)
		}
	}
	if err == nil && whole {
		in.data, err = readInput(in.Name, file, left)
		file.Close()
		return int64(len(in.data)), err
	}
	if err == nil {
		_, err = file.Seek(bom, io.SeekStart)
	}
	if err != nil {
		file.Close()
		return 0, err
	}
	// As checked: a file that grows while it is read is read as it was.
	in.text = &limitedFile{Reader: io.LimitReader(file, size-bom), Closer: file}
	return size - bom, nil
}

type limitedFile struct {
	io.Reader
	io.Closer
}

// checkUTF8 reads r through, at most left bytes, and returns its size and the length of its UTF-8 byte-order
// mark (0 when it has none), or -1 when it starts with another byte-order mark; it refuses what toUTF8 refuses of
// a file without one, with the same words.
func checkUTF8(name string, r io.Reader, left int64) (size, bom int64, err error) {
	buf := make([]byte, 64<<10)
	lr := io.LimitReader(r, left+1)
	for {
		n, err := io.ReadFull(lr, buf)
		chunk := buf[:n]
		if size == 0 {
			switch {
			case bytes.HasPrefix(chunk, utf8BOM):
				bom = int64(len(utf8BOM))
			case otherBOM(chunk):
				return 0, -1, nil
			}
		}
		size += int64(n)
		if size > left {
			return 0, 0, tooLarge(name, left < maxInputBytes)
		}
		if bom == 0 && bytes.IndexByte(chunk, 0) >= 0 {
			return 0, 0, holdsNUL(name)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return size, bom, nil
		}
		if err != nil {
			return 0, 0, fmt.Errorf("read %s: %w", name, err)
		}
	}
}

// readInput reads at most left bytes of r and returns them as UTF-8.
func readInput(name string, r io.Reader, left int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, left+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if int64(len(data)) > left {
		return nil, tooLarge(name, left < maxInputBytes)
	}
	return toUTF8(name, data)
}

// tooLarge names the bound an input went past: alone, or added to the inputs read before it (after).
func tooLarge(name string, after bool) error {
	if after {
		return fmt.Errorf("%s: the inputs add up to more than %d MiB, the most llmbudget reads in one run: "+
			"split them across runs", name, maxInputBytes>>20)
	}
	return fmt.Errorf("%s: larger than %d MiB, the most llmbudget reads in one run: split it "+
		"(the API server stores at most 1.5 MiB per object)", name, maxInputBytes>>20)
}

// toUTF8 transcodes UTF-16 with a byte-order mark (what Windows PowerShell's > writes) and drops a UTF-8 one. Any
// other encoding is refused: the YAML splitter looks for "---" as UTF-8 bytes, so it would read such a file only
// in part.
func toUTF8(name string, data []byte) ([]byte, error) {
	var order binary.ByteOrder
	switch {
	case bytes.HasPrefix(data, utf8BOM):
		return data[len(utf8BOM):], nil
	case bytes.HasPrefix(data, []byte{0xff, 0xfe, 0, 0}), bytes.HasPrefix(data, []byte{0, 0, 0xfe, 0xff}):
		return nil, fmt.Errorf("%s: UTF-32 is not read: save it as UTF-8", name)
	case bytes.HasPrefix(data, []byte{0xff, 0xfe}):
		order = binary.LittleEndian
	case bytes.HasPrefix(data, []byte{0xfe, 0xff}):
		order = binary.BigEndian
	case bytes.IndexByte(data, 0) >= 0:
		return nil, holdsNUL(name)
	default:
		return data, nil
	}
	data = data[2:]
	if len(data)%2 != 0 {
		return nil, fmt.Errorf("%s: UTF-16 (byte-order mark) with an odd number of bytes: the file is cut short", name)
	}
	units := make([]uint16, len(data)/2)
	for i := range units {
		units[i] = order.Uint16(data[2*i:])
	}
	return []byte(string(utf16.Decode(units))), nil
}

// utf8BOM is UTF-8's byte-order mark, which toUTF8 drops.
var utf8BOM = []byte{0xef, 0xbb, 0xbf}

// otherBOM reports whether data starts with a byte-order mark toUTF8 transcodes or refuses: UTF-16's or UTF-32's.
func otherBOM(data []byte) bool {
	return bytes.HasPrefix(data, []byte{0xff, 0xfe}) || bytes.HasPrefix(data, []byte{0xfe, 0xff}) ||
		bytes.HasPrefix(data, []byte{0, 0, 0xfe, 0xff})
}

func holdsNUL(name string) error {
	return fmt.Errorf("%s: holds NUL bytes: UTF-16 or UTF-32 without a byte-order mark, or not text; "+
		"save it as UTF-8", name)
}

// manifestFiles lists the manifests under name when it is a directory, else name itself, so that reading a
// missing file reports it; skipped are the other files and the hidden directories (.git) under name.
func manifestFiles(name string, exclude []string) (files []string, skipped []SkippedFile, err error) {
	if name != "-" && excluded(name, exclude) {
		return nil, nil, nil
	}
	if info, err := os.Stat(name); err != nil || !info.IsDir() {
		return []string{name}, nil, nil
	}
	err = filepath.WalkDir(name, func(path string, e fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case path != name && excluded(path, exclude) && e.IsDir():
			return filepath.SkipDir
		case path != name && excluded(path, exclude):
			return nil
		case e.IsDir() && path != name && strings.HasPrefix(e.Name(), "."):
			skipped = append(skipped, SkippedFile{path, "a hidden directory"})
			return filepath.SkipDir
		case e.IsDir():
			return nil
		case !isManifest(path):
			skipped = append(skipped, SkippedFile{path, "not a .yaml, .yml or .json file"})
		case !e.Type().IsRegular():
			skipped = append(skipped, SkippedFile{path, "not a regular file"})
		default:
			files = append(files, path)
		}
		return nil
	})
	return files, skipped, err // in lexical order, as WalkDir walks
}

func isManifest(path string) bool {
	ext := filepath.Ext(path)
	return ext == ".yaml" || ext == ".yml" || ext == ".json"
}

// excluded is whether a glob of exclude matches path: one without a "/" its name, one with a "/" the whole path.
func excluded(path string, exclude []string) bool {
	for _, glob := range exclude {
		target := filepath.Base(path)
		if strings.Contains(glob, "/") {
			target = filepath.Clean(path)
		}
		if ok, _ := filepath.Match(filepath.Clean(glob), target); ok {
			return true
		}
	}
	return false
}

// CheckGlobs refuses a glob filepath.Match cannot read ("[a-"), naming it: it would match nothing.
func CheckGlobs(globs []string) error {
	for _, g := range globs {
		if _, err := filepath.Match(g, ""); err != nil {
			return fmt.Errorf("%q: %w", g, err)
		}
	}
	return nil
}
