// Command image builds llmbudget's container image without Docker: an OCI image of the
// static binary on an empty base (no shell, no package manager), user 65532, entrypoint
// /llmbudget with the default argument `serve`, written as an OCI image layout (and
// optionally a docker-style tarball of one platform for `docker load` / `podman load`).
//
// Everything in the image is a function of its inputs: the binaries, the files under -rootfs,
// the version, the revision and -epoch (the commit time), so two builds of one commit have
// the same digest. `make image` runs it; `make test-image` checks the result.
//
//	go run . -out ../../bin/image -version 0.1.0 -revision $(git rev-parse HEAD) \
//	  -epoch $(git log -1 --format=%ct) -bin linux/amd64=../../bin/linux_amd64/llmbudget
//
// The image needs no CA certificates (llmbudget makes no outbound TLS connections) and no
// time zone files (the binary embeds them).
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// repository is the image's name in references and in the tarball's tag.
const repository = "ghcr.io/llmbudget/llmbudget"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// binFlag collects -bin os/arch[/variant]=path flags.
type binFlag map[string]string

func (b binFlag) String() string { return fmt.Sprint(map[string]string(b)) }

func (b binFlag) Set(s string) error {
	plat, file, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("-bin %q: want os/arch=path", s)
	}
	p, err := v1.ParsePlatform(plat)
	if err != nil {
		return fmt.Errorf("-bin %q: %w", s, err)
	}
	b[p.String()] = file
	return nil
}

func run(args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	bins := binFlag{}
	fs.Var(bins, "bin", "os/arch=path of a static llmbudget binary (repeat for each platform)")
	out := fs.String("out", "", "directory of the OCI image layout to write (replaced)")
	tarPath := fs.String("tar", "", "also write a docker-style tarball of the first platform's image here")
	version := fs.String("version", "", "llmbudget version (the image's tag)")
	revision := fs.String("revision", "", "commit the binaries were built from")
	epoch := fs.Int64("epoch", 0, "creation time in Unix seconds (the commit time, SOURCE_DATE_EPOCH)")
	rootfs := fs.String("rootfs", "rootfs", "directory of files to put in the image besides the binary")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || *version == "" || len(bins) == 0 {
		return fmt.Errorf("-out, -version and at least one -bin are required")
	}
	b := Build{
		Version: *version, Revision: *revision, Created: time.Unix(*epoch, 0).UTC(), RootFS: *rootfs, Binaries: bins,
	}
	idx, err := b.Index()
	if err != nil {
		return err
	}
	if err := writeLayout(*out, idx, *version); err != nil {
		return err
	}
	if *tarPath != "" {
		return writeTarball(*tarPath, b, *version)
	}
	return nil
}

// writeLayout replaces dir with an OCI image layout whose index.json names one entry, the
// multi-platform index, tagged with version (`crane push DIR REF` pushes that index).
func writeLayout(dir string, idx v1.ImageIndex, version string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	ref := map[string]string{"org.opencontainers.image.ref.name": version}
	if err := p.AppendIndex(idx, layout.WithAnnotations(ref)); err != nil {
		return fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s: %s:%s@%s\n", dir, repository, version, d)
	return nil
}

// writeTarball writes the first platform's image as a tarball that `docker load` and
// `podman load` read, tagged repository:version.
func writeTarball(file string, b Build, version string) error {
	first := b.platforms()[0]
	p, err := v1.ParsePlatform(first)
	if err != nil {
		return err
	}
	img, err := b.image(*p, b.Binaries[first])
	if err != nil {
		return err
	}
	tag, err := name.NewTag(repository + ":" + version)
	if err != nil {
		return err
	}
	if err := tarball.WriteToFile(file, tag, img); err != nil {
		return fmt.Errorf("tarball %s: %w", file, err)
	}
	fmt.Printf("%s: %s (%s)\n", file, tag, first)
	return nil
}
