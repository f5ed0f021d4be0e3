#!/usr/bin/env bash
# Writes the team `boardroom bench` builds in memory as files: a master and
# N members (m0000, m0001, ...), each with its soul, into DIR.
#
#   scripts/gen-team.sh N DIR
set -euo pipefail

n=$1
dir=$2
mkdir -p "$dir/agents" "$dir/souls"
printf -- '---\nname: master\nrole: master\ndescription: leads\n---\n' >"$dir/agents/master.md"
echo 'You lead. Give every member one part.' >"$dir/souls/master.md"
for i in $(seq 0 $((n - 1))); do
  m=$(printf 'm%04d' "$i")
  printf -- '---\nname: %s\nrole: member\ndescription: writes one part\n---\n' "$m" >"$dir/agents/$m.md"
  echo "You are $m. Write your part in one sentence." >"$dir/souls/$m.md"
done
