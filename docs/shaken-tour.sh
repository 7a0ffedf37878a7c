#!/usr/bin/env bash
# SHAKEN certificates end to end, with a test PKI made here by openssl: trust an STI-CA root,
# configure a signing credential, sign an outgoing call (STI-AS) with a key bound to it, verify
# it (STI-VS) in the ATIS-1000082 shape and in the SIP Identity header shape, then forward the
# call (a div PASSporT, RFC 8946) and verify the diverted call.
#
#   X5U_ALLOW_HTTP=true X5U_ALLOW_PRIVATE=true npm start    # terminal 1: the x5u here is the
#                                                           # server's own http://localhost URL
#   docs/shaken-tour.sh                                     # terminal 2, in the repository
#
# Terminal 2 needs neither variable: the server records the ones it runs with in its database
# at start, and the CLI judges the x5u by those. The server's address: KNS_URL, else its PORT
# (the environment or ./.env, as npm start reads it). Whatever the tour adds (the root, the
# credential, the API key) it removes when it ends, also when a step fails or on Ctrl-C.
#
# In production the x5u is an https URL on a public address and the root is your STI-CA's
# (STI_TRUST_ANCHORS or `kns shaken trust add`); the two X5U_ variables stay unset. CI runs
# this file against a fresh server (test/docs/shaken-tour.test.ts). Needs bash, curl, openssl.
set -euo pipefail
cd "$(dirname "$0")/.."

[ -z "${PORT:-}" ] && [ -f .env ] && PORT=$(sed -n 's/^PORT=//p' .env | tail -n 1)
BASE=${KNS_URL:-http://localhost:${PORT:-8080}}
NAME="tour$RANDOM"
TMP=$(mktemp -d)

TOUR="shaken tour"
# kns, field, step, call, expect, need_server
source docs/tour-helpers.sh

# What the tour added, removed on every exit in the reverse order (each set once it exists).
ANCHOR= CREDENTIAL= KEY_ID=
clean_up() {
  local status=$?
  trap - EXIT INT TERM
  [ -z "$KEY_ID" ] || undo api-key delete "$KEY_ID"
  [ -z "$CREDENTIAL" ] || undo shaken credential remove "$CREDENTIAL"
  [ -z "$ANCHOR" ] || undo shaken trust remove "$ANCHOR"
  rm -rf "$TMP"
  [ "$status" = 0 ] || [ -n "$LEFT" ] || printf '%s: stopped (exit %s); what it had added is removed\n' "$TOUR" "$status" >&2
  exit "$status"
}
# undo <kns arguments>: one removal, or the command to finish it by hand.
LEFT=
undo() { kns "$@" --json >/dev/null 2>&1 || { LEFT=1; printf '%s: could not undo a step; run: npx kns %s\n' "$TOUR" "$*" >&2; }; }
trap clean_up EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

need_server "X5U_ALLOW_HTTP=true X5U_ALLOW_PRIVATE=true npm start"

step "A test STI-CA root, and a SHAKEN end-entity certificate it issues (P-256, digitalSignature, TNAuthList SPC 1234, the SHAKEN policy)"
cat > "$TMP/pki.cnf" <<'EOF'
[req]
distinguished_name = dn
[dn]
[root]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[leaf]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
certificatePolicies = 2.16.840.1.114569.1.1.3
1.3.6.1.5.5.7.1.26 = ASN1:SEQUENCE:tn_auth_list
[tn_auth_list]
spc = EXP:0,IA5:1234
EOF
openssl ecparam -name prime256v1 -genkey -noout -out "$TMP/root.key"
openssl req -x509 -new -key "$TMP/root.key" -subj "/C=US/O=Tour STI-CA/CN=Tour STI Root" -days 30 -config "$TMP/pki.cnf" -extensions root -out "$TMP/root.pem"
openssl ecparam -name prime256v1 -genkey -noout -out "$TMP/leaf.key"
openssl req -new -key "$TMP/leaf.key" -subj "/C=US/O=Tour Carrier/CN=SHAKEN 1234" -config "$TMP/pki.cnf" -out "$TMP/leaf.csr"
openssl x509 -req -in "$TMP/leaf.csr" -CA "$TMP/root.pem" -CAkey "$TMP/root.key" -CAcreateserial -days 30 -sha256 \
  -extfile "$TMP/pki.cnf" -extensions leaf -out "$TMP/leaf.pem" 2>/dev/null
kns shaken cert-info "$TMP/leaf.pem" >&2

step "Trust the root (STI_TRUST_ANCHORS does the same from a file)"
ANCHOR=$(kns shaken trust add "$TMP/root.pem" --json | field added.0.fingerprint)
say "trusted the Tour STI Root: $ANCHOR"

step "The signing credential: its key is stored encrypted; its chain is served at the x5u; its display name is signed as the caller name"
kns shaken credential add --name "$NAME" --key "$TMP/leaf.key" --cert "$TMP/leaf.pem" --x5u "$BASE/shaken/certs/$NAME.pem" --display-name "Tour Carrier" >&2
CREDENTIAL=$NAME
curl -sfS "$BASE/shaken/certs/$NAME.pem" | head -1 >&2

step "An API key for the SBC: signing (STI-AS, bound to this credential, attestation A to C) and caller (STI-VS)"
CREATED=$(kns api-key create --vendor "Tour Carrier" --scopes caller,signing --credentials "$NAME" --attest A,B,C --json)
KEY_ID=$(field id <<<"$CREATED")
KEY=$(field key <<<"$CREATED")
say "created API key $KEY_ID for Tour Carrier: ${KEY:0:24}..."
sleep 1   # the server hears of the new anchor and credential through the change signal

step "STI-AS: sign the outgoing call +1 202 555 0142 -> +1 415 555 0199 (ATIS-1000082 signingRequest)"
NOW=$(date +%s)
ORIGID=$(node -e 'console.log(crypto.randomUUID())')
IDENTITY=$(call POST /stir/v1/signing "{\"signingRequest\":{\"orig\":{\"tn\":\"12025550142\"},\"dest\":{\"tn\":[\"14155550199\"]},\"attest\":\"A\",\"iat\":$NOW,\"origid\":\"$ORIGID\",\"credential\":\"$NAME\"}}" \
  | field signingResponse.identity)

step "STI-VS: verify the Identity header as the terminating SBC would (verificationRequest)"
BODY=$(node -e 'console.log(JSON.stringify({ verificationRequest: { from: { tn: "12025550142" }, to: { tn: ["14155550199"] }, time: Number(process.argv[1]), identity: process.argv[2] } }))' "$NOW" "$IDENTITY")
call POST /stir/v1/verification "$BODY" | expect verificationResponse.verstat TN-Validation-Passed

step "The same through call-signature-verification, with the Identity header verbatim: trust x5u, SPC 1234, the caller name"
BODY=$(node -e 'console.log(JSON.stringify({ origTN: "+12025550142", destTN: "+14155550199", identity: process.argv[1] }))' "$IDENTITY")
ANSWER=$(call POST /numsys/call-signature-verification "$BODY")
expect trust x5u <<<"$ANSWER"
expect spc 1234 <<<"$ANSWER"
expect rcd.nam "Tour Carrier" <<<"$ANSWER"

step "The called number forwards the call to +1 415 555 0123: the diverting provider signs a div PASSporT (RFC 8946)"
# Only on top of the call's own Identity, which must verify from the caller to the diverting number.
BODY=$(node -e 'console.log(JSON.stringify({ signingRequest: { ppt: "div", orig: { tn: "12025550142" }, div: { tn: "14155550199" }, dest: { tn: ["14155550123"] }, iat: Number(process.argv[1]), identity: process.argv[2] } }))' "$NOW" "$IDENTITY")
DIV=$(call POST /stir/v1/signing "$BODY" | field signingResponse.identity)

step "The forwarded call carries both Identity headers: verified link by link, the diversion reported"
BODY=$(node -e 'console.log(JSON.stringify({ origTN: "+12025550142", destTN: "+14155550123", identity: [process.argv[1], process.argv[2]] }))' "$IDENTITY" "$DIV")
ANSWER=$(call POST /numsys/call-signature-verification "$BODY")
expect success true <<<"$ANSWER"
expect div.0.from +14155550199 <<<"$ANSWER"

step "A forged call: the same header for another calling number fails, with the reason a proxy sends"
BODY=$(node -e 'console.log(JSON.stringify({ verificationRequest: { from: { tn: "12025550143" }, to: { tn: ["14155550199"] }, time: Number(process.argv[1]), identity: process.argv[2] } }))' "$NOW" "$IDENTITY")
call POST /stir/v1/verification "$BODY" | expect verificationResponse.reasoncode 438

printf '\nshaken tour: every step answered as expected\n' >&2
