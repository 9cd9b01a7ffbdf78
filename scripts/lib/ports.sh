# Port helpers shared by the local service scripts; sourced, after the caller defines `die`.

# True when something accepts TCP connections on 127.0.0.1:$1.
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Prints a port on 127.0.0.1 that nothing listens on now.
free_port() {
    local port tries=0
    while [ $tries -lt 200 ]; do
        port=$((20000 + RANDOM % 30000))
        port_busy "$port" || { echo "$port"; return 0; }
        tries=$((tries + 1))
    done
    die "found no free port"
}
