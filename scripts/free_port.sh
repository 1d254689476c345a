# Sourced by the benchmark scripts: free_port prints a TCP port on 127.0.0.1
# that was free a moment ago, never one this run handed out before (binding
# to port 0 can return the same free port twice in a row). The caller's
# $work directory keeps the ports given.
free_port() {
  local p
  while :; do
    p=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    grep -qx "$p" "$work/ports" 2>/dev/null || break
  done
  echo "$p" >>"$work/ports"; echo "$p"
}
