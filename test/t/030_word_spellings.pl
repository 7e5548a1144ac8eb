# One home per word (issue 38, item 1): the C code of the shell (src/
# but src/core) spells no word of the policy core's lists
# (src/core/words.h) as a C string of its own: it prints and parses them
# with the core's tables.  The SQL statements written in C may keep a word
# as a literal where the statement is fixed (a partial index's predicate,
# say, needs the constant): each such 'WORD' must be a word of the core,
# so that a misspelt or a removed word fails here rather than match
# nothing at run time.  No server: the sources are read.
use strict;
use warnings;
use Test::More;

my $root = $ENV{TESTDIR} // '.';

# The core's words, from its lists: W(QS_CONSTANT, "WORD").
open(my $fh, '<', "$root/src/core/words.h") or die "src/core/words.h: $!";
my $header = do { local $/; <$fh> };
close $fh;
my %word = map { $_ => 1 } ($header =~ /\bW\(QS_\w+,\s*"([^"]+)"\)/g);
cmp_ok(scalar(keys %word), '>=', 60, 'the lists of src/core/words.h are read');

# Literals of SQL that are not words of the scheduler: privileges.
my %not_a_word = map { $_ => 1 } qw(USAGE);

my (@spelt, @unknown);
my $kept = 0;
for my $file (sort glob("$root/src/*/*.c"), sort glob("$root/src/*/*.h"))
{
	next if $file =~ m{/src/core/};
	open(my $c, '<', $file) or die "$file: $!";
	my $text = do { local $/; <$c> };
	close $c;
	$text =~ s{/\*.*?\*/}{ }gs;
	(my $short = $file) =~ s{^\Q$root\E/}{};
	# C strings, and char literals (skipped) so that '"' opens none
	while ($text =~ /("(?:[^"\\\n]|\\.)*")|'(?:[^'\\\n]|\\.)'/g)
	{
		next unless defined $1;
		my $string = substr($1, 1, -1);
		push @spelt, "$short: $string" if $word{$string};
		while ($string =~ /'([A-Z][A-Z_]*)(?::([A-Z_]+))?%?'/g)
		{
			my @parts = grep { defined } ($1, $2);
			next if $not_a_word{$1};
			$kept++;
			push @unknown, "$short: '$1" . (defined $2 ? ":$2" : '') . "'"
			  if grep { !$word{$_} } @parts;
		}
	}
}
is_deeply(\@spelt, [], 'no C string of the shell is a word of the core (it uses the core\'s names)');
is_deeply(\@unknown, [], 'every word in the SQL written in C is a word of the core');
note("words kept as literals in fixed SQL statements: $kept");
cmp_ok($kept, '>', 0, 'the SQL of the shell is read (it keeps some literals)');

done_testing();
