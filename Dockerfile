# syntax=docker/dockerfile:1
#
# llmbudget hook service image.
#   docker build --build-arg VERSION=0.1.0 -t ghcr.io/llmbudget/llmbudget:0.1.0 .
# Multi-arch: docker buildx build --platform linux/amd64,linux/arm64 ... (Go cross-compiles;
# no emulation needed).

FROM --platform=$BUILDPLATFORM golang:1.26-bookworm AS build
WORKDIR /src

# Modules first, so source edits do not download them again.
COPY go.mod go.sum ./
RUN go mod download

COPY hooks/ hooks/
COPY internal/ internal/

ARG VERSION=dev
ARG TARGETOS
ARG TARGETARCH
# Static binary (no cgo): it runs on distroless/static. Time zone data is embedded in the
# binary, so the image needs no tzdata.
RUN --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /llmbudget ./hooks

FROM gcr.io/distroless/static-debian12:nonroot
LABEL org.opencontainers.image.title="llmbudget" \
      org.opencontainers.image.description="LLM cost budgets for Kubernetes: Metacontroller hooks" \
      org.opencontainers.image.source="https://github.com/llmbudget/llmbudget"
COPY --from=build /llmbudget /llmbudget
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/llmbudget"]
CMD ["serve"]
