# Relay's container image: a static binary on distroless, run as a non-root
# user, with /data the only place it writes (README.md "Container").
#
#   docker build -t relay \
#     --build-arg VERSION=$(git describe --tags --always) \
#     --build-arg COMMIT=$(git rev-parse HEAD) \
#     --build-arg DATE=$(git log -1 --format=%cI) .

# The Go toolchain go.mod asks for.
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETOS TARGETARCH
ARG VERSION=dev COMMIT=unknown DATE=unknown
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# SQLite is pure Go (modernc.org/sqlite), so the binary needs no cgo and no libc.
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -buildvcs=false \
    -ldflags "-s -w -X github.com/relay-ai/relay/internal/app.Version=$VERSION -X github.com/relay-ai/relay/internal/app.Commit=$COMMIT -X github.com/relay-ai/relay/internal/app.Date=$DATE" \
    -o /out/relay ./cmd/relay
RUN mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/relay /relay
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
ENV RELAY_ADDR=0.0.0.0:3080 \
    RELAY_DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 3080
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 CMD ["/relay", "healthcheck"]
ENTRYPOINT ["/relay"]
CMD ["serve"]
