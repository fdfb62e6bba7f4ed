# A PostgreSQL server in a directory of its own, for tests and benchmarks:
# Debian's binaries, a fresh data directory, trust authentication for the
# user `warpt`, loopback only on a free port. Run by an unprivileged user:
# Debian's `postgres` when this runs as root. Source this file, then
#   pg_start DIR [SETTING=VALUE...]   # exports PG_URL (the `postgres` database)
#   pg_stop DIR

_pg_as=()

pg_start() {
    local dir="$1" bin port opts=()
    shift
    bin="$(dirname "$(compgen -G "/usr/lib/postgresql/*/bin/initdb" | sort -V | tail -1)")"
    mkdir -p "$dir"
    if [[ "$(id -u)" == 0 ]]; then
        chown postgres "$dir"
        chmod 755 "$(dirname "$dir")"
        _pg_as=(runuser -u postgres --)
    fi
    "${_pg_as[@]}" "$bin/initdb" -D "$dir/data" -U warpt --auth=trust -E UTF8 >/dev/null
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    local setting
    for setting in "$@"; do
        opts+=(-c "$setting")
    done
    "${_pg_as[@]}" "$bin/pg_ctl" -D "$dir/data" -w -l "$dir/log" \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1 ${opts[*]}" start >/dev/null
    echo "$bin/pg_ctl" > "$dir/pg_ctl.path"
    export PG_URL="postgres://warpt@127.0.0.1:$port/postgres"
}

pg_stop() {
    local dir="$1"
    if [[ -f "$dir/pg_ctl.path" ]]; then
        "${_pg_as[@]}" "$(cat "$dir/pg_ctl.path")" -D "$dir/data" -m fast stop >/dev/null 2>&1 || true
    fi
}
