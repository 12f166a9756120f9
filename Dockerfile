# syntax=docker/dockerfile:1
#
# llmbudget hook service image, for those who build with Docker. `make image` builds the same
# image without Docker (see tools/image): same files, user, entrypoint and arguments.
#   docker build -t ghcr.io/llmbudget/llmbudget:0.1.0 .
# Multi-arch: docker buildx build --platform linux/amd64,linux/arm64 ... (Go cross-compiles;
# no emulation needed).

FROM --platform=$BUILDPLATFORM golang:1.26-bookworm AS build
WORKDIR /src

# Modules first, so source edits do not download them again.
COPY go.mod go.sum ./
RUN go mod download

COPY VERSION ./
COPY hooks/ hooks/
COPY internal/ internal/

# The version comes from the VERSION file unless --build-arg VERSION=... overrides it.
ARG VERSION
ARG TARGETOS
ARG TARGETARCH
# Static binary (no cgo): the image has no C library or dynamic loader. Time zone data is
# embedded in the binary, so the image needs no tzdata; it makes no outbound TLS calls, so it
# needs no CA certificates.
RUN --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION:-$(cat VERSION)}" -o /llmbudget ./hooks/llmbudget

# An empty base: no shell, no package manager; only the binary and the user database that
# names user 65532 (distroless's "nonroot").
FROM scratch
LABEL org.opencontainers.image.title="llmbudget" \
      org.opencontainers.image.description="LLM cost budgets for Kubernetes: Metacontroller hooks" \
      org.opencontainers.image.source="https://github.com/llmbudget/llmbudget" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY tools/image/rootfs/ /
COPY --from=build /llmbudget /llmbudget
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/llmbudget"]
CMD ["serve"]
