#!/usr/bin/env bash
# test/style_check.sh: the source rules of the C code (make stylecheck), as
# TAP lines, one per rule; exits non-zero when a rule is broken, naming each
# offence on a "#" line before the rule's "not ok".
#
#   - no function longer than 60 lines in src/*.c, src/core/*.c, agent/*.c and
#     test/unit/*.c,
#     from the line of its name to its closing brace at column 0;
#   - no header in src/ or agent/ includes postgres.h;
#   - every src/*.c includes postgres.h, as its first include.
#
# The files are whatever the globs find, so the rules judge the tree as it
# is.  Run from the top of the tree (the Makefile does), or give it as $1.
set -uo pipefail
cd "${1:-$(dirname "$0")/..}" || exit 2
shopt -s nullglob

MAX_LINES=60
n=0
failed=0

# report OK DESCRIPTION: one TAP line
report() {
	n=$((n + 1))
	if [ "$1" = ok ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		failed=1
	fi
}

# long_functions FILE...: "FILE:LINE NAME: N lines" for each function longer
# than MAX_LINES.  A function is a body that opens with "{" at column 0 (or
# a declarator line at column 0 that ends with "{") after a declarator: the
# lines just above it, back to a blank line, a comment, a preprocessor line
# or the end of a declaration or body, which name something followed by a
# parenthesised list and hold no "=" (so that neither a prototype, which
# ends with ";", nor a struct or an initialiser is taken for one).  It ends
# at the next "}" at column 0.
long_functions() {
	local f
	for f in "$@"; do
		awk -v max="$MAX_LINES" -v file="$f" '
		{ line[NR] = $0 }
		function stop(s) {
			return s ~ /^[ \t]*$/ || s ~ /;[ \t]*$/ || s ~ /^#/ || s ~ /^\}/ ||
				s ~ /^\/\*/ || s ~ /^ \*/ || s ~ /\{[ \t]*$/
		}
		# report the function whose declarator is lines first..last and
		# whose body opens at line open
		function judge(first, last, open,    decl, i, name, at, end) {
			decl = ""
			at = 0
			for (i = first; i <= last; i++) {
				decl = decl " " line[i]
				if (at == 0 && line[i] ~ /[A-Za-z_][A-Za-z0-9_]*[ \t]*\(/)
					at = i
			}
			sub(/[ \t]*\{[ \t]*$/, "", decl)
			if (at == 0 || decl ~ /=/ || decl !~ /\)[ \t]*$/)
				return
			name = line[at]
			match(name, /[A-Za-z_][A-Za-z0-9_]*[ \t]*\(/)
			name = substr(name, RSTART, RLENGTH - 1)
			sub(/[ \t]+$/, "", name)
			for (end = open + 1; end <= NR && line[end] !~ /^\}/; end++)
				;
			if (end > NR)
				return
			if (end - at + 1 > max)
				printf "%s:%d %s: %d lines\n", file, at, name, end - at + 1
		}
		END {
			for (i = 1; i <= NR; i++) {
				if (line[i] ~ /^\{/) {
					for (j = i - 1; j >= 1 && !stop(line[j]); j--)
						;
					if (j + 1 <= i - 1)
						judge(j + 1, i - 1, i)
				} else if (line[i] ~ /^[A-Za-z_].*\)[ \t]*\{[ \t]*$/) {
					for (j = i - 1; j >= 1 && !stop(line[j]); j--)
						;
					judge(j + 1, i, i)
				}
			}
		}' "$f"
	done
}

# rule_function_length DESCRIPTION FILE...
rule_function_length() {
	local what=$1 out
	shift
	out=$(long_functions "$@")
	if [ -n "$out" ]; then
		echo "$out" | sed 's/^/# /'
		report "not ok" "$what"
	else
		report ok "$what"
	fi
}

rule_function_length "no function in src/*.c is longer than $MAX_LINES lines" src/*.c
rule_function_length "no function in src/core/*.c is longer than $MAX_LINES lines" src/core/*.c
rule_function_length "no function in agent/*.c is longer than $MAX_LINES lines" agent/*.c
rule_function_length "no function in test/unit/*.c is longer than $MAX_LINES lines" test/unit/*.c

# no header includes postgres.h: a .c file includes it first, once
out=$(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]postgres\.h[">]' \
	/dev/null src/*.h src/core/*.h agent/*.h)
if [ -n "$out" ]; then
	echo "$out" | sed 's/^/# /'
	report "not ok" "no header in src/ or agent/ includes postgres.h"
else
	report ok "no header in src/ or agent/ includes postgres.h"
fi

# every file of the shell includes postgres.h before anything else
out=
for f in src/*.c; do
	first=$(grep -m1 -E '^[[:space:]]*#[[:space:]]*include' "$f")
	if ! echo "$first" | grep -qE '^#include "postgres\.h"[[:space:]]*$'; then
		out+="$f: first include: ${first:-none}"$'\n'
	fi
done
if [ -n "$out" ]; then
	printf '%s' "$out" | sed 's/^/# /'
	report "not ok" "every src/*.c includes postgres.h first"
else
	report ok "every src/*.c includes postgres.h first"
fi

exit "$failed"
