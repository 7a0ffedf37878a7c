# Helpers the tours share (docs/tour.sh, docs/shaken-tour.sh): sourced, not run.
# BASE is the server's URL; KEY, when set, is sent as x-api-key; TOUR names the tour in errors.

kns() { npx --no-install kns "$@"; }
# field <path> < json: one value of a JSON document (dots between keys).
field() { node -e 'let s = ""; process.stdin.on("data", (d) => { s += d }).on("end", () => {
  let doc
  try { doc = JSON.parse(s) } catch { console.error(`${process.env.TOUR || "tour"}: expected a JSON answer, got ${JSON.stringify(s.slice(0, 200))}`); process.exit(1) }
  const v = process.argv[1].split(".").reduce((o, k) => o?.[k], doc)
  if (v === undefined) { console.error(`no ${process.argv[1]} in ${s}`); process.exit(1) }
  console.log(typeof v === "string" ? v : JSON.stringify(v)) })' "$1"; }
step() { printf '\n== %s\n' "$*" >&2; }
# say <text>: what a CLI step did (its answer went into a variable).
say() { printf '   %s\n' "$*" >&2; }
# need_server [start command]: stops with what to do when no server answers at BASE.
need_server() {
  curl -sS -o /dev/null --max-time 5 "$BASE/healthz" 2>/dev/null && return 0
  printf '%s: no KNS server answers at %s. Start one in another terminal (%s), or point the tour at yours:\n  KNS_URL=http://localhost:<port> %s\n' "${TOUR:-tour}" "$BASE" "${1:-npm start}" "$0" >&2
  exit 1
}
# shorten < text: signatures, PASSporTs and other long tokens cut to their first 24 characters
# (a run of 100 or more base64/base64url characters; a 0x address, 66, stays whole).
shorten() { sed -E 's#([A-Za-z0-9_+/=.-]{24})[A-Za-z0-9_+/=.-]{76,}#\1...#g'; }
# call <method> <path> [json]: the request with the key (when KEY is set), its answer printed
# (shortened: the whole answer goes to stdout, for the next step).
call() {
  local method=$1 path=$2 body=${3:-}
  printf '%s %s %s\n' "$method" "$path" "$body" | shorten >&2
  local answer
  answer=$(curl -sS -X "$method" "$BASE$path" -H 'content-type: application/json' ${KEY:+-H "x-api-key: $KEY"} ${body:+-d "$body"})
  printf '%s\n' "$answer" | shorten >&2
  printf '%s' "$answer"
}
# expect <path> <value> < json: stops the tour when the answer says otherwise.
expect() { local got; got=$(field "$1"); [ "$got" = "$2" ] || { echo "${TOUR:-tour}: expected $1 = $2, got $got" >&2; exit 1; }; }
