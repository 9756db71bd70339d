# scripts/bench_profile.sh: BENCH_PROFILE=1 of scripts/bench.sh, which
# sources it (it uses bench.sh's variables and helpers: bin, work, OUT,
# logs, DUR, WARM, TARGET_C, RUN_TIMEOUT, PIDS, ms, stop, fail, die).

# profile_check: dies unless perf is here and may profile other processes
# (root, or kernel.perf_event_paranoid at 1 or less): perf would otherwise
# fall back to user space only, and every "in system calls" share would
# read 0 %.
profile_check() {
  command -v perf >/dev/null || die "BENCH_PROFILE=1 needs perf (Debian: apt-get install linux-perf; make bench installs it)"
  local paranoid
  paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 2)
  [ "$(id -u)" = 0 ] || [ "$paranoid" -le 1 ] ||
    die "BENCH_PROFILE=1 needs root or kernel.perf_event_paranoid <= 1 (it is $paranoid) to profile the kernel side"
}

# profile LABEL PROTO URL PIDS ARGS...: one run at c=$TARGET_C, not
# counted, with `perf record -g` on the processes of PIDS (kind:pid,... or
# one pid) over the middle of its measured window (from 500 ms after the
# warm-up to 500 ms before the end; the whole window when it is 2 s or
# less); writes $OUT/profile-LABEL-PROTO.txt, each kind of process's
# samples sorted into buckets of work by scripts/perfbuckets, unless the
# run or perf failed. perf's own output goes to $logs/profile-LABEL-PROTO.log.
profile() {
  local label=$1 proto=$2 url=$3 pids=$4 data txt log lg kinds start span ok=1
  shift 4
  data=$work/profile-$label-$proto.data txt=$OUT/profile-$label-$proto.txt log=$logs/profile-$label-$proto.log
  rm -f "$txt"
  # The kinds of a cluster's PIDS, in order; an all-in-one's is mcpfleet.
  kinds=$(tr ',' '\n' <<<"$pids" | sed -n 's/:.*//p' | awk '!seen[$0]++' | paste -sd, -)
  [ -n "$kinds" ] || kinds=mcpfleet
  start=$(ms "$WARM") span=$(ms "$DUR")
  if [ "$span" -gt 2000 ]; then start=$((start + 500)) span=$((span - 1000)); fi
  timeout -k 5 "$RUN_TIMEOUT" "$bin/mcpfleet" bench -quiet -proto "$proto" -url "$url" -pid "$pids" -c "$TARGET_C" \
    -d "$DUR" -warmup "$WARM" "$@" >/dev/null &
  lg=$!
  PIDS+=("$lg")
  sleep "$(awk -v m="$start" 'BEGIN { printf "%.3f", m / 1000 }')"
  if ! timeout -k 5 "$RUN_TIMEOUT" perf record -F 999 -g -p "$(sed 's/[^,]*://g' <<<"$pids")" -o "$data" \
    -- sleep "$(awk -v m="$span" 'BEGIN { printf "%.3f", m / 1000 }')" >"$log" 2>&1; then
    fail "perf record of $label $proto failed; see $log"
    ok=0
  fi
  if ! wait "$lg"; then
    fail "the profiled run of $label $proto failed"
    ok=0
  fi
  stop "$lg"
  [ "$ok" = 1 ] || return 0
  { echo "$label $proto, c=$TARGET_C, $((span))ms of a $DUR run: share of each process kind's CPU samples"
    perf script -i "$data" -F comm,ip,sym 2>>"$log" | "$bin/perfbuckets" -comm "$kinds"
  } >"$txt" || { fail "sorting the profile of $label $proto; see $log"; return 0; }
  echo "profile: $txt"
}
