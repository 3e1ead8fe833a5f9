#!/bin/sh
# The MCP conformance suite's client for its auth scenarios: clawkit as a
# user would run it. `mcp login URL` (the browser is a fetcher that follows
# the authorization server's redirect to clawkit's loopback listener, as a
# user approving at once would), then `mcp call --url` twice, which find
# the login by themselves. The scenario's context (MCP_CONFORMANCE_CONTEXT)
# carries pre-registered credentials; they reach clawkit on stdin, never on
# its command line. Run by the suite: conformance client --command "sh
# scripts/conformance-auth-client.sh" (docs/mcp.md, "Login").
set -eu
url=$(eval echo "\${$#}")
clawkit=${CLAWKIT:-clawkit}
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
export CLAWKIT_HOME="$home"
# A "browser" that approves at once: GET the authorization URL and follow
# the redirect to the loopback listener.
cat >"$home/browser" <<'B'
#!/bin/sh
exec curl -s -L -o /dev/null --max-time 30 "$1"
B
chmod +x "$home/browser"
export BROWSER="$home/browser"
ctx=${MCP_CONFORMANCE_CONTEXT:-{\}}
field() { "${NODE:-node}" -e 'const c=JSON.parse(process.argv[1]);const v=c[process.argv[2]];process.stdout.write(v===undefined?"":String(v))' "$ctx" "$1"; }
client_id=$(field client_id)
secret=$(field client_secret)
key=$(field private_key_pem)
alg=$(field signing_algorithm)
jwt=$(field valid_jwt)
scenario=${MCP_CONFORMANCE_SCENARIO:-}
set -- --client-metadata-url https://conformance-test.local/client-metadata.json
case $scenario in
*cross-app-access*|*enterprise-managed-authorization*)
	# The IdP's ID token goes to a file only this user can read; the
	# client's secret on stdin.
	(umask 077 && field idp_id_token >"$home/id-token")
	printf '%s\n' "$secret" | "$clawkit" mcp login "$url" --grant cross-app --idp-token-url "$(field idp_token_endpoint)" \
		--idp-client-id "$(field idp_client_id)" --id-token-file "$home/id-token" --client-id "$client_id" --client-secret-stdin ;;
*wif-jwt-bearer*)
	printf '%s\n' "$jwt" | "$clawkit" mcp login "$url" --grant jwt-bearer --client-id "$client_id" --assertion-stdin ;;
*client-credentials*)
	if [ -n "$key" ]; then
		printf '%s\n' "$key" | "$clawkit" mcp login "$url" --grant client-credentials --client-id "$client_id" --private-key-stdin ${alg:+--signing-alg "$alg"}
	else
		printf '%s\n' "$secret" | "$clawkit" mcp login "$url" --grant client-credentials --client-id "$client_id" --client-secret-stdin
	fi ;;
*)
	if [ -n "$client_id" ] && [ -n "$secret" ]; then
		printf '%s\n' "$secret" | "$clawkit" mcp login "$url" --client-id "$client_id" --client-secret-stdin "$@"
	else
		"$clawkit" mcp login "$url" "$@" </dev/null
	fi ;;
esac
"$clawkit" mcp call --url "$url" --method tools/list >/dev/null
"$clawkit" mcp call --url "$url" --method tools/call --params '{"name":"test-tool","arguments":{}}' >/dev/null
