#!/usr/bin/env bash
# Firebird on Debian for local use, tests and CI. The server is started by hand
# (fbguard as the firebird user): the machines this runs on have no init system
# to start the service the package installs.
#   infra/firebird.sh up              install if missing, start if not running
#   infra/firebird.sh createdb FILE KIND CHARSET   (re)create a demo ERP database
#        KIND is demo, other or dialect1 (a legacy ERP in SQL dialect 1);
#        FILE is a name under $FB_DATA
#   infra/firebird.sh restart         stop and start the server
#   infra/firebird.sh sysdba          print the SYSDBA password
set -euo pipefail

FB_DATA=${FB_DATA:-/var/lib/firebird/3.0/data}
GATEWAY_USER=GATEWAY
GATEWAY_PASSWORD=${FB_GATEWAY_PASSWORD:-gateway-demo}
# The reads' own user, for a deployment that keeps one apart (ReadOnlyDatabaseUser).
READER_USER=GATEWAY_READER
READER_PASSWORD=${FB_READER_PASSWORD:-reader-demo}
here=$(cd "$(dirname "$0")" && pwd)

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

listening() { (exec 3<>/dev/tcp/127.0.0.1/3050) 2>/dev/null; }

install() {
  if command -v isql-fb >/dev/null && [ -x /usr/sbin/fbguard ]; then return; fi
  echo "installing Firebird 3 (firebird3.0-server, firebird3.0-utils)..." >&2
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq firebird3.0-server firebird3.0-utils >/dev/null
}

start() {
  # A server a test stopped (SIGSTOP) and did not resume still listens.
  as_root pkill -CONT -x firebird || true
  listening && return
  as_root mkdir -p /run/firebird3.0
  as_root chown firebird:firebird /run/firebird3.0
  as_root su -s /bin/sh firebird -c '/usr/sbin/fbguard -daemon -forever'
  for _ in $(seq 1 100); do listening && return; sleep 0.1; done
  echo "Firebird did not start listening on 127.0.0.1:3050" >&2
  exit 1
}

stop() {
  as_root pkill -x fbguard || true
  as_root pkill -x firebird || true
  for _ in $(seq 1 100); do listening || return 0; sleep 0.1; done
}

sysdba() {
  # The package writes ISC_PASSWORD="..." here.
  as_root sed -n 's/^ISC_PASSWORD="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' /etc/firebird/3.0/SYSDBA.password
}

createdb() {
  local file=$1 kind=$2 charset=${3:-UTF8} pw dialect=3
  pw=$(sysdba)
  if [ "$kind" = dialect1 ]; then dialect=1; fi
  as_root mkdir -p "$FB_DATA"
  as_root chown firebird:firebird "$FB_DATA"
  as_root rm -f "$FB_DATA/$file"
  {
    echo "SET SQL DIALECT $dialect;"
    echo "CREATE DATABASE 'localhost:$FB_DATA/$file' USER 'SYSDBA' PASSWORD '$pw' DEFAULT CHARACTER SET $charset;"
    echo "CREATE OR ALTER USER $GATEWAY_USER PASSWORD '$GATEWAY_PASSWORD' USING PLUGIN Srp;"
    echo "CREATE OR ALTER USER $READER_USER PASSWORD '$READER_PASSWORD' USING PLUGIN Srp;"
    echo "COMMIT;"
    if [ "$kind" = dialect1 ]; then
      cat "$here/sql/dialect1.sql"
    else
      cat "$here/sql/$kind-exceptions.sql" "$here/sql/schema.sql" "$here/sql/$kind-data.sql"
    fi
    # The demo keeps idempotency keys (infra/instances.demo.json); so do
    # the dialect 1 tests.
    if [ "$kind" != other ]; then cat "$here/sql/idempotency.sql"; fi
  } | isql-fb -q -ch UTF8 -bail >/dev/null
}

case "${1:-}" in
  up) install; start ;;
  createdb) shift; createdb "$@" ;;
  restart) stop; start ;;
  sysdba) sysdba ;;
  *) echo "usage: $0 up|createdb FILE KIND [CHARSET]|restart|sysdba" >&2; exit 2 ;;
esac
