#!/usr/bin/env bash
# The five-minute tour of the README, as a script that runs: a number registered, its owner
# logging in with the code texted to it and approving a vendor's requests (a signature, and
# kns::approve on the embedded ledger), and a verified call.
#
#   npm start              # terminal 1, in the repository: the server on http://localhost:8080
#   docs/tour.sh           # terminal 2, same directory (the CLI uses the server's database and .env)
#
# In development (SMS_DELIVERY=log) the login code is not texted: the server writes it to its
# log, in terminal 1, and the tour asks you to type it. Each step prints the request and the
# answer, and stops the tour if the answer is not what the step expects. CI runs this file
# against a fresh server (test/docs/tour.test.ts), so it cannot drift from what the service
# does. Needs bash, curl and the repository's `npx kns`.
set -euo pipefail
cd "$(dirname "$0")/.."

# The server's address: KNS_URL, else its PORT (from the environment or ./.env, as npm start reads it).
[ -z "${PORT:-}" ] && [ -f .env ] && PORT=$(sed -n 's/^PORT=//p' .env | tail -n 1)
BASE=${KNS_URL:-http://localhost:${PORT:-8080}}
export KNS_URL=$BASE                               # `kns phone-login` talks to the server over HTTP
RUN="$(date +%s)-$RANDOM"                          # fresh reference numbers on every run
PHONE="+1415555$(printf %04d $((RANDOM % 10000)))"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
SESSION="$TMP/phone-login.json"                    # the login's ephemeral key: gone with the tour

TOUR="tour"
# kns, field, step, call, expect
source docs/tour-helpers.sh
need_server

step "An API key for the vendor (the first start also printed a development key)"
KEY=$(kns api-key create --vendor "Tour Bank" --scopes approvals,caller --json | field key)
say "created an API key for Tour Bank (scopes approvals, caller): ${KEY:0:24}..."

step "Register (or log in): the number gets a KNS token minted to its zkLogin address"
ZK_ADDRESS=$(call POST /numsys/register-user-login "{\"email\":\"ada@example.com\",\"phoneNumber\":\"$PHONE\"}" | field zkAddress)
TOKEN=$(call POST /numsys/object-id-lookup "{\"phoneNumber\":\"$PHONE\"}" | field objectId)

step "The vendor asks the number's owner to approve (method sign: a signature)"
REF=$(call POST /numsys/approval-phone "{\"title\":\"SIM replacement\",\"message\":\"A new SIM was requested\",
  \"successRedirectUrl\":\"https://example.com/ok\",\"cancelRedirectUrl\":\"https://example.com/cancel\",
  \"referenceNumber\":\"tour-sign-$RUN\",\"method\":\"sign\",\"phoneNumber\":\"$PHONE\"}" | field approvalNumber)
call GET "/numsys/transaction_details?ref=$REF" | expect phoneLogin true
printf 'In a browser: %s/approve?ref=%s ("Approve with your phone number"). Here: the same from the command line.\n' "$BASE" "$REF" >&2

step "The owner logs in with the number: a 6-digit code is texted to it (in development: the server's log)"
kns phone-login send-code --phone "$PHONE" --session "$SESSION"
printf 'The 6-digit code for %s in the server'"'"'s log (terminal 1): ' "$PHONE" >&2
read -r CODE
kns phone-login finish --code "$CODE" --session "$SESSION" --json | expect address "$ZK_ADDRESS"
say "the code was accepted: logged in as $PHONE, with the zkLogin address its registration gave ($ZK_ADDRESS)"

step "The owner signs signMessage with the phone login (a zkLogin signature), the vendor's service verifies"
SIG=$(kns phone-login sign-approval --ref "$REF" --session "$SESSION")
say "signed signMessage as $ZK_ADDRESS with the phone login (a zkLogin signature, ${#SIG} characters)"
call POST /numsys/verify_signature "{\"approvalNumber\":\"$REF\",\"signature\":\"$SIG\"}" | expect success true
call GET "/numsys/transaction_details?ref=$REF" | expect wallet "$ZK_ADDRESS"

step "Method event: the owner calls kns::approve on the ledger (here the embedded one), the digest is verified"
REF=$(call POST /numsys/approval-phone "{\"title\":\"Wire transfer\",\"message\":\"Approve a transfer of 900 EUR\",
  \"successRedirectUrl\":\"https://example.com/ok\",\"cancelRedirectUrl\":\"https://example.com/cancel\",
  \"referenceNumber\":\"tour-event-$RUN\",\"method\":\"event\",\"phoneNumber\":\"$PHONE\"}" | field approvalNumber)
SIG=$(kns phone-login sign-ledger-approve --object-id "$TOKEN" --ref "$REF" --session "$SESSION")
say "signed the kns::approve text for token $TOKEN and ref $REF"
DIGEST=$(call POST /ledger/v1/approve "{\"objectId\":\"$TOKEN\",\"ref\":\"$REF\",\"signature\":\"$SIG\"}" | field digest)
call POST /numsys/verify_transaction "{\"approvalNumber\":\"$REF\",\"digest\":\"$DIGEST\"}" | expect success true
call GET "/numsys/transaction_details?ref=$REF" | expect approved true

step "Caller verification: an operator key in a keystore, linked to the number"
kns keystore keygen --out "$TMP/op" >/dev/null        # a bare name would go under $DATA_DIR/keys
say "made an ES256 key pair: $TMP/op.key.pem (private), $TMP/op.pub.pem"
KEYSTORE=$(kns keystore create --name "Op Telecom" --creator "$ZK_ADDRESS" --public-key "$TMP/op.pub.pem" --json)
KEYSTORE_ID=$(field objectId <<<"$KEYSTORE")
KEY_ID=$(field keyId <<<"$KEYSTORE")
say "created keystore $KEYSTORE_ID holding key $KEY_ID"
kns registry link --phone "$PHONE" --keystore "$KEYSTORE_ID" >/dev/null
say "linked $PHONE to it: calls from $PHONE may be signed with that key"

step "A call signed with that key (a PASSporT is fresh for CALL_MAX_AGE_S = 60 s: verify it right away)"
JWT=$(kns passport sign --orig "$PHONE" --dest +14155550199 --key "$TMP/op.key.pem" --kid "$KEY_ID")
say "signed a PASSporT for a call from $PHONE to +14155550199: ${JWT:0:32}..."
call POST /numsys/call-signature-verification "{\"origTN\":\"$PHONE\",\"destTN\":\"+14155550199\",\"jwt\":\"$JWT\"}" | expect success true
call POST /numsys/object-id-lookup "{\"phoneNumber\":\"$PHONE\"}" | expect objectId "$TOKEN"

printf '\ntour: every step answered as expected\n' >&2
