# Sourced by the loopback scripts (bench-save.sh, run-phases.sh,
# wave-429.sh): `start_loopback FLAGS...` starts `$LB serve FLAGS...` with
# its URL written to `$WORK/url`, and sets `LB_PID` (for the caller's
# trap to kill) and `LB_URL` (the server's base URL).
start_loopback() {
  "$LB" serve "$@" >"$WORK/url" &
  LB_PID=$!
  for _ in $(seq 50); do [ -s "$WORK/url" ] && break; sleep 0.1; done
  [ -s "$WORK/url" ] || { echo "$LB did not start in 5 s" >&2; exit 2; }
  LB_URL=$(head -1 "$WORK/url")
}
