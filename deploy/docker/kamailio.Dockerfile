# Kamailio's dispatcher for compose.yaml's sip profile: Debian's kamailio 5.6, the package the
# cluster test runs. Build from the repository's root:
#   docker build -f deploy/docker/kamailio.Dockerfile -t kns-kamailio .
FROM debian:bookworm-slim
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends kamailio \
    && rm -rf /var/lib/apt/lists/*
COPY deploy/compose/kamailio.cfg /etc/kamailio/kamailio.cfg
COPY deploy/compose/dispatcher.list /etc/kamailio/dispatcher.list
# The package's own unprivileged user; 5060 needs no capability.
USER kamailio
EXPOSE 5060/udp 5060/tcp
STOPSIGNAL SIGTERM
ENTRYPOINT ["kamailio", "-DD", "-E", "-f", "/etc/kamailio/kamailio.cfg"]
