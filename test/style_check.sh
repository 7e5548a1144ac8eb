#!/usr/bin/env bash
# test/style_check.sh: the source rules of the C and SQL code (make stylecheck), as
# TAP lines, one per rule; exits non-zero when a rule is broken, naming each
# offence on a "#" line before the rule's "not ok".
#
#   - no function longer than 60 lines in src/*/*.c, agent/*.c, cli/*.c and
#     test/unit/*.c,
#     from the line of its name to its closing brace at column 0;
#   - no header in src/ or agent/ includes postgres.h;
#   - every .c of the shell (src/ but src/core) includes postgres.h first;
#   - no include cycle between modules (a .c and the .h of its name);
#   - no SQL or PL/pgSQL function in sql/*.sql longer than 60 lines;
#   - no probe of an older schema, every SQL-callable function checks the
#     schema's version, and every C symbol the scripts name is in the
#     library (one library serves one schema: sql/updates/README.md).
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

shell=()
for f in src/*/*.c; do [[ $f == src/core/* ]] || shell+=("$f"); done
rule_function_length "no function in the shell (src/*/*.c) is longer than $MAX_LINES lines" "${shell[@]}"
rule_function_length "no function in src/core/*.c is longer than $MAX_LINES lines" src/core/*.c
rule_function_length "no function in agent/*.c is longer than $MAX_LINES lines" agent/*.c
rule_function_length "no function in cli/*.c is longer than $MAX_LINES lines" cli/*.c
rule_function_length "no function in test/unit/*.c is longer than $MAX_LINES lines" test/unit/*.c

# no header includes postgres.h: a .c file includes it first, once
out=$(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]postgres\.h[">]' \
	/dev/null src/*/*.h agent/*.h)
if [ -n "$out" ]; then
	echo "$out" | sed 's/^/# /'
	report "not ok" "no header in src/ or agent/ includes postgres.h"
else
	report ok "no header in src/ or agent/ includes postgres.h"
fi

# every file of the shell includes postgres.h before anything else
out=
for f in "${shell[@]}"; do
	first=$(grep -m1 -E '^[[:space:]]*#[[:space:]]*include' "$f")
	if ! echo "$first" | grep -qE '^#include "postgres\.h"[[:space:]]*$'; then
		out+="$f: first include: ${first:-none}"$'\n'
	fi
done
if [ -n "$out" ]; then
	printf '%s' "$out" | sed 's/^/# /'
	report "not ok" "every file of the shell includes postgres.h first"
else
	report ok "every file of the shell includes postgres.h first"
fi

# no include cycle between modules (test/include_cycles.pl)
out=$(perl test/include_cycles.pl src/*/*.[ch] agent/*.[ch])
if [ -n "$out" ]; then
	echo "$out" | sed 's/^/# include cycle: /'
	report "not ok" "no include cycle between the modules of src/ and agent/"
else
	report ok "no include cycle between the modules of src/ and agent/"
fi

# long_sql_functions FILE...: "FILE:LINE NAME: N lines" for each function or
# procedure of SQL or PL/pgSQL longer than MAX_LINES, counted from the line
# of its CREATE to the end of its body: the line of the dollar quote that
# closes a quoted body, the END of a BEGIN ATOMIC body (at column 0, as the
# sources write it), or the line that ends a RETURN body (with ";").  A C
# function (AS 'MODULE_PATHNAME', ...) has no body in SQL and is not
# counted; views are no functions.
long_sql_functions() {
	awk -v max="$MAX_LINES" '
	function judge(last) {
		if (last - start + 1 > max)
			printf "%s:%d %s: %d lines\n", FILENAME, start, name, last - start + 1
		start = 0
	}
	FNR == 1 { start = 0 }
	start == 0 && /^[ \t]*CREATE[ \t]+(OR[ \t]+REPLACE[ \t]+)?(FUNCTION|PROCEDURE)[ \t]/ {
		start = FNR
		body = ""
		name = $0
		sub(/.*(FUNCTION|PROCEDURE)[ \t]+/, "", name)
		sub(/\(.*/, "", name)
	}
	start > 0 {
		s = $0
		if (body == "") {
			if (match(s, /\$([A-Za-z_][A-Za-z_0-9]*)?\$/)) {
				body = "quote"
				tag = substr(s, RSTART, RLENGTH)
				s = substr(s, RSTART + RLENGTH)
			} else if (s ~ /BEGIN[ \t]+ATOMIC/) {
				body = "atomic"
				next
			} else if (s ~ /^[ \t]*RETURN([ \t]|$)/)
				body = "return"
			else if (s ~ /;[ \t]*$/) {
				start = 0	# a C function: no body here
				next
			}
		}
		if (body == "quote" && index(s, tag))
			judge(FNR)
		else if (body == "atomic" && s ~ /^END;?[ \t]*$/)
			judge(FNR)
		else if (body == "return" && s ~ /;[ \t]*$/)
			judge(FNR)
	}' "$@"
}

# no function of SQL or PL/pgSQL in sql/*.sql longer than MAX_LINES
out=$(long_sql_functions sql/*.sql)
if [ -n "$out" ]; then
	echo "$out" | sed 's/^/# /'
	report "not ok" "no SQL or PL/pgSQL function in sql/*.sql is longer than $MAX_LINES lines"
else
	report ok "no SQL or PL/pgSQL function in sql/*.sql is longer than $MAX_LINES lines"
fi

# One library serves one schema (doc/releasing.md): no statement variant
# for an older schema, so no probe of what the schema has (get_attnum,
# to_regclass and its kin, the number of arguments a function was declared
# with) and no name of one (SchemaLevel, _0_2) in the shell or the agent;
# and every SQL-callable function checks the schema's version first
# (QsCheckSchemaVersion: in its body, or QsCallUnlocked's for those of
# QS_UNLOCKED_FUNCTION).
out=$(grep -nE 'get_attnum[[:space:]]*\(|to_reg(class|proc|procedure|type|namespace|role|oper|operator)[[:space:]]*\(|PG_NARGS[[:space:]]*\(|SchemaLevel|_0_[0-9]+([^0-9]|$)' \
	/dev/null "${shell[@]}" $(ls src/*/*.h | grep -v '^src/core/') agent/*.[ch])
if [ -n "$out" ]; then
	echo "$out" | sed 's/^/# schema probe: /'
	report "not ok" "no probe of an older schema in the shell or the agent"
else
	report ok "no probe of an older schema in the shell or the agent"
fi
out=$(perl -e '
	my $bad = "";
	for my $f (@ARGV) {
		open(my $fh, "<", $f) or die "$f: $!";
		my $text = do { local $/; <$fh> };
		for my $fn ($text =~ /^PG_FUNCTION_INFO_V1\((\w+)\);/mg) {
			my ($body) = $text =~ /^\Q$fn\E\(PG_FUNCTION_ARGS\)\n\{\n(.*?)^\}/ms;
			$bad .= "$f: $fn\n" unless defined $body && $body =~ /\bQsCheckSchemaVersion\(\);/;
		}
		if ($f =~ m{/queue_lock\.c$}) {
			my ($body) = $text =~ /^QsCallUnlocked\(.*?\n\{\n(.*?)^\}/ms;
			$bad .= "$f: QsCallUnlocked\n" unless defined $body && $body =~ /\bQsCheckSchemaVersion\(\);/;
		}
	}
	print $bad;' "${shell[@]}")
if [ -n "$out" ]; then
	echo "$out" | sed 's/^/# no version check: /'
	report "not ok" "every SQL-callable function of the library checks the schema's version"
else
	report ok "every SQL-callable function of the library checks the schema's version"
fi

# PostgreSQL chains the released update scripts, run with the current
# library, and CREATE FUNCTION ... LANGUAGE C looks its symbol up there: every
# symbol a script names (sql/, sql/updates/, sql/released/) stays in the
# library (sql/updates/README.md).
out=
for sym in $(grep -ohE "AS 'MODULE_PATHNAME', '[A-Za-z0-9_]+'" sql/*.sql sql/updates/*.sql sql/released/*.sql |
		sed "s/.*, '\(.*\)'/\1/" | sort -u); do
	grep -qE "^(PG_FUNCTION_INFO_V1\($sym\);|QS_UNLOCKED_FUNCTION\($sym,)" "${shell[@]}" ||
		out+="$sym"$'\n'
done
if [ -n "$out" ]; then
	printf '%s' "$out" | sed 's/^/# symbol no longer in the library: /'
	report "not ok" "every C symbol an install or update script names is in the library"
else
	report ok "every C symbol an install or update script names is in the library"
fi

exit "$failed"
