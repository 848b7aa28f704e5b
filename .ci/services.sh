# PostgreSQL and Redis for the real-server tests (openarmature-postgres,
# openarmature-redis), the Restate server and haproxy for openarmature-restate's
# fleet tests, and chromium + chromedriver for the browser test
# (tests/it/chat_browser.rs). Source it, then call `oa_services_start`:
#
#     source .ci/services.sh && oa_services_start
#
# It installs the Debian packages when the servers are missing (root only),
# starts both on 127.0.0.1 on free ports with their data under one temporary
# directory, exports OPENARMATURE_TEST_POSTGRES_URL and
# OPENARMATURE_TEST_REDIS_URL, and stops both (removing the directory) when the
# shell exits. The Restate server comes from npm (@restatedev/restate-server, a
# static binary; installed once into $OA_RESTATE_CACHE, default
# /tmp/openarmature-restate-npm), runs on free 127.0.0.1 ports with telemetry off,
# and is exported as OPENARMATURE_TEST_RESTATE_ADMIN_URL /
# OPENARMATURE_TEST_RESTATE_INGRESS_URL; haproxy (Debian) as
# OPENARMATURE_TEST_HAPROXY (the tests start their own balancer). Tests without these variables print "skipped: ..." and pass,
# unless OPENARMATURE_REQUIRE_SERVICES=1 (CI sets it): then they fail.
#
# PostgreSQL refuses to run initdb as root, so as root the cluster belongs to
# the `postgres` user the Debian package creates.

oa_services_log() { printf '[services] %s\n' "$*" >&2; }

# The newest installed PostgreSQL server's bin directory, or nothing.
oa_pg_bindir() {
    local dir
    dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
    if [ -n "$dir" ] && [ -x "$dir/initdb" ]; then
        printf '%s\n' "$dir"
    fi
}

oa_services_install() {
    local missing=()
    [ -n "$(oa_pg_bindir)" ] || missing+=(postgresql)
    command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
    # openarmature-restate's fleet tests: the balancer in front of the workers, and
    # npm to install the Restate server.
    oa_haproxy_bin >/dev/null || missing+=(haproxy)
    command -v npm >/dev/null 2>&1 || missing+=(npm)
    command -v curl >/dev/null 2>&1 || missing+=(curl)
    # The chat_server browser test (tests/it/chat_browser.rs): headless chromium over WebDriver.
    command -v chromedriver >/dev/null 2>&1 || missing+=(chromium chromium-driver)
    if [ "${#missing[@]}" -eq 0 ]; then
        return 0
    fi
    if [ "$(id -u)" -ne 0 ]; then
        oa_services_log "missing ${missing[*]} and not root: install them (apt-get install -y ${missing[*]})"
        return 1
    fi
    oa_services_log "installing ${missing[*]} from Debian's packages"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# The haproxy executable (Debian installs it under /usr/sbin), or nothing.
oa_haproxy_bin() {
    command -v haproxy 2>/dev/null || { [ -x /usr/sbin/haproxy ] && printf '%s\n' /usr/sbin/haproxy; }
}

# The Restate server version the tests pin (npm @restatedev/restate-server).
OA_RESTATE_VERSION="1.7.12"

# The restate-server binary, installed from npm into the cache when missing.
oa_restate_bin() {
    local cache="${OA_RESTATE_CACHE:-/tmp/openarmature-restate-npm}"
    local bin="$cache/node_modules/@restatedev/restate-server-linux-x64/bin/restate-server"
    if [ ! -x "$bin" ] || ! grep -q "\"version\": \"$OA_RESTATE_VERSION\"" \
        "$cache/node_modules/@restatedev/restate-server/package.json" 2>/dev/null; then
        mkdir -p "$cache"
        oa_services_log "installing @restatedev/restate-server@$OA_RESTATE_VERSION from npm into $cache"
        npm install --silent --no-audit --no-fund --ignore-scripts --prefix "$cache" \
            "@restatedev/restate-server@$OA_RESTATE_VERSION" >/dev/null || return 1
    fi
    [ -x "$bin" ] && printf '%s\n' "$bin"
}

# Starts the Restate server on free ports, data under $OA_SERVICES_DIR/restate.
oa_restate_start() {
    local bin admin_port ingress_port fabric_port
    bin="$(oa_restate_bin)" || return 1
    admin_port="$(oa_free_port)" || return 1
    ingress_port="$(oa_free_port)" || return 1
    fabric_port="$(oa_free_port)" || return 1
    mkdir -p "$OA_SERVICES_DIR/restate"
    cat >"$OA_SERVICES_DIR/restate/config.toml" <<EOF_RESTATE
disable-telemetry = true
default-num-partitions = 4
rocksdb-total-memory-size = "256 MiB"
log-filter = "warn"
bind-address = "127.0.0.1:$fabric_port"
advertised-address = "http://127.0.0.1:$fabric_port/"
[admin]
bind-address = "127.0.0.1:$admin_port"
disable-web-ui = true
[ingress]
bind-address = "127.0.0.1:$ingress_port"
EOF_RESTATE
    "$bin" --no-logo --listen-mode tcp --base-dir "$OA_SERVICES_DIR/restate/data" \
        -c "$OA_SERVICES_DIR/restate/config.toml" >"$OA_SERVICES_DIR/restate/server.log" 2>&1 &
    echo $! >"$OA_SERVICES_DIR/restate.pid"
    for _ in $(seq 1 100); do
        curl -fsS "http://127.0.0.1:$admin_port/health" >/dev/null 2>&1 \
            && curl -fsS "http://127.0.0.1:$ingress_port/restate/health" >/dev/null 2>&1 && break
        sleep 0.1
    done
    curl -fsS "http://127.0.0.1:$ingress_port/restate/health" >/dev/null || {
        tail -n 30 "$OA_SERVICES_DIR/restate/server.log" >&2
        return 1
    }
    export OPENARMATURE_TEST_RESTATE_ADMIN_URL="http://127.0.0.1:$admin_port"
    export OPENARMATURE_TEST_RESTATE_INGRESS_URL="http://127.0.0.1:$ingress_port"
    OPENARMATURE_TEST_HAPROXY="$(oa_haproxy_bin)"
    export OPENARMATURE_TEST_HAPROXY
    oa_services_log "Restate $OA_RESTATE_VERSION: admin on 127.0.0.1:$admin_port, ingress on 127.0.0.1:$ingress_port; haproxy at $OPENARMATURE_TEST_HAPROXY"
}

# A TCP port on 127.0.0.1 nobody listens on.
oa_free_port() {
    local port
    for _ in $(seq 1 50); do
        port=$((20000 + RANDOM % 30000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            printf '%s\n' "$port"
            return 0
        fi
    done
    return 1
}

# Runs "$@" as the cluster owner (postgres when we are root).
oa_as_pg_owner() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

oa_services_stop() {
    if [ -n "${OA_SERVICES_DIR:-}" ] && [ -d "$OA_SERVICES_DIR" ]; then
        local bindir
        bindir="$(oa_pg_bindir)"
        if [ -f "$OA_SERVICES_DIR/pg/postmaster.pid" ]; then
            oa_as_pg_owner "$bindir/pg_ctl" -D "$OA_SERVICES_DIR/pg" -m immediate -w stop >/dev/null 2>&1 || true
        fi
        if [ -f "$OA_SERVICES_DIR/redis.pid" ]; then
            kill "$(cat "$OA_SERVICES_DIR/redis.pid")" 2>/dev/null || true
        fi
        if [ -f "$OA_SERVICES_DIR/restate.pid" ]; then
            local restate_pid
            restate_pid="$(cat "$OA_SERVICES_DIR/restate.pid")"
            kill "$restate_pid" 2>/dev/null || true
            for _ in $(seq 1 50); do
                kill -0 "$restate_pid" 2>/dev/null || break
                sleep 0.1
            done
            kill -9 "$restate_pid" 2>/dev/null || true
        fi
        rm -rf "$OA_SERVICES_DIR"
        oa_services_log "stopped PostgreSQL, Redis and Restate"
    fi
    OA_SERVICES_DIR=""
}

oa_services_start() {
    oa_services_install || return 1
    local bindir pg_port redis_port
    bindir="$(oa_pg_bindir)"
    OA_SERVICES_DIR="$(mktemp -d /tmp/openarmature-services.XXXXXX)"
    chmod 755 "$OA_SERVICES_DIR"
    trap oa_services_stop EXIT
    if [ "$(id -u)" -eq 0 ]; then
        mkdir -p "$OA_SERVICES_DIR/pg" && chown postgres: "$OA_SERVICES_DIR/pg"
    fi
    pg_port="$(oa_free_port)" || return 1
    oa_as_pg_owner "$bindir/initdb" -D "$OA_SERVICES_DIR/pg" -U openarmature -A trust \
        --no-sync >"$OA_SERVICES_DIR/initdb.log" 2>&1 || {
        cat "$OA_SERVICES_DIR/initdb.log" >&2
        return 1
    }
    oa_as_pg_owner "$bindir/pg_ctl" -D "$OA_SERVICES_DIR/pg" -w -t 30 -l "$OA_SERVICES_DIR/pg/server.log" \
        -o "-c listen_addresses=127.0.0.1 -p $pg_port -k $OA_SERVICES_DIR/pg -c max_connections=200" \
        start >/dev/null || {
        cat "$OA_SERVICES_DIR/pg/server.log" >&2
        return 1
    }
    oa_as_pg_owner "$bindir/createdb" -h 127.0.0.1 -p "$pg_port" -U openarmature openarmature_test

    redis_port="$(oa_free_port)" || return 1
    redis-server --bind 127.0.0.1 --port "$redis_port" --save '' --appendonly no \
        --dir "$OA_SERVICES_DIR" --daemonize yes --pidfile "$OA_SERVICES_DIR/redis.pid" \
        --logfile "$OA_SERVICES_DIR/redis.log" >/dev/null
    for _ in $(seq 1 50); do
        redis-cli -h 127.0.0.1 -p "$redis_port" ping >/dev/null 2>&1 && break
        sleep 0.1
    done
    redis-cli -h 127.0.0.1 -p "$redis_port" ping >/dev/null || return 1

    export OPENARMATURE_TEST_POSTGRES_URL="postgres://openarmature@127.0.0.1:$pg_port/openarmature_test"
    export OPENARMATURE_TEST_REDIS_URL="redis://127.0.0.1:$redis_port/"
    oa_services_log "PostgreSQL on 127.0.0.1:$pg_port, Redis on 127.0.0.1:$redis_port (data in $OA_SERVICES_DIR)"

    oa_restate_start || return 1
}
