package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Layout of the image. The Dockerfile produces the same one.
const (
	// binaryPath is where the llmbudget binary sits in the image.
	binaryPath = "/llmbudget"
	// user is the numeric user and group the container runs as (distroless's "nonroot").
	user = "65532:65532"
	// port is the port `serve` listens on by default.
	port = "8080/tcp"
)

// entrypoint and cmd make `docker run IMAGE` run `llmbudget serve`, while Kubernetes `args:`
// (the Deployment passes `serve --addr=:8080 ...`) and `docker run IMAGE version` replace
// only the subcommand.
var (
	entrypoint = []string{binaryPath}
	cmd        = []string{"serve"}
)

// Build describes one image: the same metadata for every platform, and one static
// binary per platform.
type Build struct {
	Version  string
	Revision string            // the commit the binaries were built from
	Created  time.Time         // fixed (the commit's time), so the digest depends on the content only
	RootFS   string            // directory whose files (etc/passwd, etc/group) go into the image
	Binaries map[string]string // platform (os/arch[/variant]) to binary
}

// Index assembles the multi-platform image index: one image per platform, each a single
// layer holding RootFS and the binary, with every timestamp set to Created.
func (b Build) Index() (v1.ImageIndex, error) {
	var adds []mutate.IndexAddendum
	for _, name := range b.platforms() {
		p, err := v1.ParsePlatform(name)
		if err != nil {
			return nil, err
		}
		img, err := b.image(*p, b.Binaries[name])
		if err != nil {
			return nil, fmt.Errorf("image for %s: %w", name, err)
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: p}})
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	return mutate.AppendManifests(idx, adds...), nil
}

// platforms lists the platforms in a fixed order, so the index does not depend on map order.
func (b Build) platforms() []string {
	return slices.Sorted(maps.Keys(b.Binaries))
}

func (b Build) image(p v1.Platform, binary string) (v1.Image, error) {
	layer, err := b.layer(binary)
	if err != nil {
		return nil, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	created := v1.Time{Time: b.Created}
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: created, CreatedBy: "make image", Comment: "llmbudget " + b.Version},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Created = created
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Config = b.config()
	return mutate.ConfigFile(img, cf)
}

func (b Build) config() v1.Config {
	return v1.Config{
		User:         user,
		Entrypoint:   entrypoint,
		Cmd:          cmd,
		WorkingDir:   "/",
		ExposedPorts: map[string]struct{}{port: {}},
		Labels: map[string]string{
			"org.opencontainers.image.title":       "llmbudget",
			"org.opencontainers.image.description": "LLM cost budgets for Kubernetes: Metacontroller hooks",
			"org.opencontainers.image.source":      "https://github.com/llmbudget/llmbudget",
			"org.opencontainers.image.licenses":    "Apache-2.0",
			"org.opencontainers.image.version":     b.Version,
			"org.opencontainers.image.revision":    b.Revision,
		},
	}
}

// layer is the image's only layer, a tar with root-owned entries in a fixed order and
// every modification time set to Created.
func (b Build) layer(binary string) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	files, err := b.rootFiles()
	if err != nil {
		return nil, err
	}
	files = append(files, entry{name: binaryPath[1:], src: binary, mode: 0o755})
	for _, f := range files {
		if err := b.write(tw, f); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", f.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// entry is one file or directory of the layer; src is empty for a directory.
type entry struct {
	name, src string
	mode      int64
}

// rootFiles walks RootFS in lexical order (filepath.WalkDir's order).
func (b Build) rootFiles() ([]entry, error) {
	var out []entry
	err := filepath.WalkDir(b.RootFS, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == b.RootFS {
			return err
		}
		rel, err := filepath.Rel(b.RootFS, p)
		if err != nil {
			return err
		}
		e := entry{name: filepath.ToSlash(rel), mode: 0o644}
		if d.IsDir() {
			e.mode = 0o755
		} else {
			e.src = p
		}
		out = append(out, e)
		return nil
	})
	return out, err
}

func (b Build) write(tw *tar.Writer, e entry) error {
	h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: b.Created}
	if e.src == "" {
		h.Typeflag, h.Name = tar.TypeDir, path.Clean(e.name)+"/"
		return tw.WriteHeader(h)
	}
	data, err := os.ReadFile(e.src)
	if err != nil {
		return err
	}
	h.Typeflag, h.Size = tar.TypeReg, int64(len(data))
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	_, err = tw.Write(data)
	return err
}
