# Sourced by scripts/with-services.sh and scripts/within.sh: finds and stops the processes of
# one run by a variable the run exported, which every process it started inherits, whatever
# group or session it put itself in and whatever else it changed in its environment.
#
#   stop_marked_processes NAME VALUE WHO [SPARED]
#
# Sends SIGKILL to every process (this shell excepted) whose environment holds NAME=VALUE
# and whose command name is not SPARED, naming each on stderr after "WHO: "; repeats until
# none is left, so that a child a process started as it was being stopped goes too.
# Bash builtins only, so that no process of the scan is itself found and stopped.

# Sets MARKED_PROCESSES to the ids of the processes whose environment holds NAME=VALUE,
# command name SPARED excepted (in this shell, not a subshell, which would find itself).
find_marked_processes() {
    local name="$1" value="$2" spared="${3:-}"
    local environ pid vars var command_name
    MARKED_PROCESSES=()
    for environ in /proc/[0-9]*/environ; do
        pid="${environ#/proc/}"
        pid="${pid%/environ}"
        [ "$pid" = "$$" ] && continue
        { mapfile -d '' vars <"$environ"; } 2>/dev/null || continue
        for var in "${vars[@]}"; do
            if [ "$var" = "$name=$value" ]; then
                command_name=""
                { read -r command_name <"/proc/$pid/comm"; } 2>/dev/null || true
                [ -n "$spared" ] && [ "$command_name" = "$spared" ] || MARKED_PROCESSES+=("$pid")
                break
            fi
        done
    done
}

stop_marked_processes() {
    local name="$1" value="$2" who="$3" spared="${4:-}"
    local pid words round
    for round in 1 2 3 4 5; do
        find_marked_processes "$name" "$value" "$spared"
        [ ${#MARKED_PROCESSES[@]} -gt 0 ] || return 0
        for pid in "${MARKED_PROCESSES[@]}"; do
            { mapfile -d '' words <"/proc/$pid/cmdline"; } 2>/dev/null || words=()
            # Said, if whoever reads it still does: a clean-up must not end on a closed pipe.
            echo "$who: stopping leftover process $pid: ${words[*]:0:6}" >&2 || true
            kill -KILL "$pid" 2>/dev/null || true
        done
        # SIGKILL takes effect at once, but a process leaves /proc only once its parent has
        # reaped it; one that was killed has an empty environment and is not found again.
        sleep 0.1
    done
}
