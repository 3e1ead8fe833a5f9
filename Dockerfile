# clawkit in a container (docs/release.md, "Container image"): the static
# linux binary of a release on an empty base, with the CA certificates
# Google's API needs, a /tmp and a home for the unprivileged user.
#
# The build context is a folder holding the `clawkit` binary to pack: make
# image extracts it from the release archive after checking the archive
# against SHA256SUMS, so the image runs exactly the released bytes.
#
#   make image            # dist/release/ from make release, then docker build
#   docker run --rm clawkit:<version> version

# Only the certificates and two folders come from this stage.
FROM alpine:3.22 AS base
RUN apk add --no-cache ca-certificates \
	&& mkdir -p /rootfs/etc/ssl/certs /rootfs/tmp /rootfs/home/clawkit \
	&& cp /etc/ssl/certs/ca-certificates.crt /rootfs/etc/ssl/certs/ \
	&& chmod 1777 /rootfs/tmp \
	&& chown 65532:65532 /rootfs/home/clawkit && chmod 0700 /rootfs/home/clawkit

FROM scratch
ARG VERSION=unknown
ARG REVISION=unknown
LABEL org.opencontainers.image.title=clawkit \
	org.opencontainers.image.version=$VERSION \
	org.opencontainers.image.revision=$REVISION
COPY --from=base /rootfs/ /
COPY clawkit /usr/local/bin/clawkit
ENV HOME=/home/clawkit PATH=/usr/local/bin
USER 65532:65532
WORKDIR /home/clawkit
ENTRYPOINT ["/usr/local/bin/clawkit"]
CMD ["--help"]
