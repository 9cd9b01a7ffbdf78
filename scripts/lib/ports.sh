# Port helpers shared by the local service scripts; sourced, after the caller defines `die`.

# True when something accepts TCP connections on 127.0.0.1:$1.
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Prints a port on 127.0.0.1 that nothing listens on now, below the kernel's range of
# ephemeral ports: a port in that range may be taken by an outgoing connection between
# this check and the server's bind.
free_port() {
    local port tries=0 low=20000 high=32768 ephemeral
    if [ -r /proc/sys/net/ipv4/ip_local_port_range ]; then
        read -r ephemeral _ </proc/sys/net/ipv4/ip_local_port_range
        [ "$ephemeral" -gt 11000 ] && high="$ephemeral" && low=$((ephemeral > 21000 ? 10000 : 1024))
    fi
    while [ $tries -lt 200 ]; do
        port=$((low + RANDOM % (high - low)))
        port_busy "$port" || { echo "$port"; return 0; }
        tries=$((tries + 1))
    done
    die "found no free port"
}
