// Command apiref writes the API reference of the llmbudget CRDs, docs/reference.md, from the CRDs in deploy/crd
// that controller-gen generates: every field of each kind with its type, whether it is required, its default,
// bounds, allowed values, CEL rules and description. `make generate` runs it after controller-gen.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// maxCRDBytes bounds a CRD file read; the API server refuses objects past about 1.5 MiB anyway.
const maxCRDBytes = 4 << 20

// crdFiles are the CRDs the reference covers, in the order it shows them.
var crdFiles = []string{"llmcostbudgets.llmbudget.dev.yaml", "clusterllmcostbudgets.llmbudget.dev.yaml"}

func main() {
	dir := flag.String("crd-dir", "deploy/crd", "directory holding the CRDs")
	out := flag.String("out", "docs/reference.md", "file to write the reference to; - writes to stdout")
	flag.Parse()
	if err := run(*dir, *out); err != nil {
		fmt.Fprintln(os.Stderr, "apiref:", err)
		os.Exit(1)
	}
}

func run(dir, out string) error {
	md, err := generate(dir)
	if err != nil {
		return err
	}
	if out == "-" {
		_, err = os.Stdout.Write(md)
		return err
	}
	if err := os.WriteFile(out, md, 0o644); err != nil {
		return fmt.Errorf("-out %s: %w", out, err)
	}
	return nil
}

// generate renders the reference of the CRDs in dir.
func generate(dir string) ([]byte, error) {
	docs := make([]document, 0, len(crdFiles))
	for _, name := range crdFiles {
		path := filepath.Join(dir, name)
		data, err := readBounded(path)
		if err != nil {
			return nil, err
		}
		c, schemas, err := parseCRD(path, data)
		if err != nil {
			return nil, err
		}
		docs = append(docs, document{c: c, schemas: schemas})
	}
	return render(docs)
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCRDBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > maxCRDBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes (maxCRDBytes)", path, maxCRDBytes)
	}
	return data, nil
}
