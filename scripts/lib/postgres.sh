# A PostgreSQL server in a directory of its own, for tests and benchmarks:
# Debian's binaries, a fresh data directory, trust authentication for the
# user `warpt`, loopback only on a free port. Run by an unprivileged user:
# Debian's `postgres` when this runs as root. Source this file, then
#   pg_start DIR [SETTING=VALUE...]   # exports PG_URL (the `postgres` database)
#   pg_stop DIR
#   pg_tls DIR                        # a CA and a server certificate for 127.0.0.1 and
#                                     # localhost; exports PG_TLS_SETTINGS (for pg_start),
#                                     # PG_TLS_CA and PG_TLS_OTHER_CA (a CA that signed nothing)

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

pg_tls() {
    local dir="$1/tls"
    mkdir -p "$dir"
    (
        cd "$dir"
        openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=warpt test CA" \
            -keyout ca.key -out ca.pem 2>/dev/null
        openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=warpt other CA" \
            -keyout other-ca.key -out other-ca.pem 2>/dev/null
        openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
            -keyout server.key -out server.csr 2>/dev/null
        printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > san.ext
        openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
            -extfile san.ext -out server.pem 2>/dev/null
        chmod 600 server.key
    )
    if [[ "$(id -u)" == 0 ]]; then
        chown postgres "$dir/server.key" "$dir/server.pem"
    fi
    export PG_TLS_SETTINGS="ssl=on ssl_cert_file=$dir/server.pem ssl_key_file=$dir/server.key"
    export PG_TLS_CA="$dir/ca.pem" PG_TLS_OTHER_CA="$dir/other-ca.pem"
}
