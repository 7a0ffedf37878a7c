# Kamailio's dispatcher for compose.yaml's sip profile: Debian's kamailio 5.6, the package the
# cluster test runs. Build from the repository's root:
#   docker build -f deploy/docker/kamailio.Dockerfile -t kns-kamailio .
FROM debian:bookworm-slim
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends kamailio \
    && rm -rf /var/lib/apt/lists/*
# The one Kamailio configuration (the cluster test runs it too); what differs per deployment
# comes as defines after the entrypoint (compose.yaml's `command`, e.g. -A WITH_TCP), and the
# nodes from the deployment's dispatcher list, mounted at /etc/kamailio/dispatcher.list.
COPY deploy/kamailio/kamailio.cfg /etc/kamailio/kamailio.cfg
# The package makes kamcmd's socket directory at boot (tmpfiles.d), which a container has not:
# `docker compose exec sip kamcmd dispatcher.list` shows what the probes see.
RUN install -d -o kamailio -g kamailio -m 0750 /run/kamailio
# The package's own unprivileged user; 5060 needs no capability.
USER kamailio
EXPOSE 5060/udp 5060/tcp
STOPSIGNAL SIGTERM
ENTRYPOINT ["kamailio", "-DD", "-E", "-f", "/etc/kamailio/kamailio.cfg"]
