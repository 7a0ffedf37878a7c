#!/usr/bin/env bash
# The five-minute tour of the README, as a script that runs: registration, an approval
# signed by a wallet, one approved on the (embedded) ledger, and a verified call.
#
#   npm start              # terminal 1, in the repository: the server on http://localhost:8080
#   docs/tour.sh           # terminal 2, same directory (the CLI uses the server's database and .env)
#
# Each step prints the request and the answer, and stops the tour if the answer is not what
# the step expects. CI runs this file against a fresh server (test/docs/tour.test.ts), so it
# cannot drift from what the service does. Needs bash, curl and the repository's `npx kns`.
set -euo pipefail
cd "$(dirname "$0")/.."

BASE=${KNS_URL:-http://localhost:8080}
RUN="$(date +%s)-$RANDOM"                          # fresh reference numbers on every run
PHONE_USER="+1415555$(printf %04d $((RANDOM % 5000)))"
PHONE_WALLET="+1415555$(printf %04d $((5000 + RANDOM % 5000)))"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

TOUR="tour"
# kns, field, step, call, expect
source docs/tour-helpers.sh

step "An API key for the vendor (the first start also printed a development key)"
KEY=$(kns api-key create --vendor "Tour Bank" --scopes approvals,caller --json | field key)

step "Register (or log in): the number gets a KNS token minted to its zkLogin address"
call POST /numsys/register-user-login "{\"email\":\"ada@example.com\",\"phoneNumber\":\"$PHONE_USER\"}" | expect success true

step "A wallet you hold the key of, owning the token of a second number"
WALLET=$(kns wallet new --json)
ADDRESS=$(field address <<<"$WALLET")
export KNS_SECRET_KEY=$(field secretKey <<<"$WALLET")     # the CLI reads it from here: not in `ps`
TOKEN=$(kns token mint --phone "$PHONE_WALLET" --owner "$ADDRESS" --json | field objectId)

step "The vendor asks the owner to approve (method sign: a wallet signature)"
REF=$(call POST /numsys/approval-phone "{\"title\":\"SIM replacement\",\"message\":\"A new SIM was requested\",
  \"successRedirectUrl\":\"https://example.com/ok\",\"cancelRedirectUrl\":\"https://example.com/cancel\",
  \"referenceNumber\":\"tour-sign-$RUN\",\"method\":\"sign\",\"phoneNumber\":\"$PHONE_WALLET\"}" | field approvalNumber)

step "The owner signs signMessage (what the approval page does with a wallet), the vendor's service verifies"
SIG=$(kns wallet sign-approval --ref "$REF")
call POST /numsys/verify_signature "{\"approvalNumber\":\"$REF\",\"signature\":\"$SIG\"}" | expect success true
call GET "/numsys/transaction_details?ref=$REF" | expect approved true

step "Method event: the owner calls kns::approve on the ledger (here the embedded one), the digest is verified"
REF=$(call POST /numsys/approval-phone "{\"title\":\"Wire transfer\",\"message\":\"Approve a transfer of 900 EUR\",
  \"successRedirectUrl\":\"https://example.com/ok\",\"cancelRedirectUrl\":\"https://example.com/cancel\",
  \"referenceNumber\":\"tour-event-$RUN\",\"method\":\"event\",\"phoneNumber\":\"$PHONE_WALLET\"}" | field approvalNumber)
DIGEST=$(kns ledger approve --object-id "$TOKEN" --ref "$REF" --json | field digest)
call POST /numsys/verify_transaction "{\"approvalNumber\":\"$REF\",\"digest\":\"$DIGEST\"}" | expect success true
call GET "/numsys/transaction_details?ref=$REF" | expect wallet "$ADDRESS"

step "Caller verification: an operator key in a keystore, linked to the number"
kns keystore keygen --out "$TMP/op" >/dev/null        # a bare name would go under $DATA_DIR/keys
KEYSTORE=$(kns keystore create --name "Op Telecom" --creator "$ADDRESS" --public-key "$TMP/op.pub.pem" --json)
KEYSTORE_ID=$(field objectId <<<"$KEYSTORE")
KEY_ID=$(field keyId <<<"$KEYSTORE")
kns registry link --phone "$PHONE_WALLET" --keystore "$KEYSTORE_ID" >/dev/null

step "A call signed with that key (a PASSporT is fresh for CALL_MAX_AGE_S = 60 s: verify it right away)"
JWT=$(kns passport sign --orig "$PHONE_WALLET" --dest +14155550199 --key "$TMP/op.key.pem" --kid "$KEY_ID")
call POST /numsys/call-signature-verification "{\"origTN\":\"$PHONE_WALLET\",\"destTN\":\"+14155550199\",\"jwt\":\"$JWT\"}" | expect success true
call POST /numsys/object-id-lookup "{\"phoneNumber\":\"$PHONE_WALLET\"}" | expect objectId "$TOKEN"

printf '\ntour: every step answered as expected\n' >&2
