#!/usr/bin/perl
# test/doc_links.pl FILE.md...: every relative link [text](path#anchor) of
# the given Markdown files names a file that exists, and its anchor is the
# slug GitHub makes of one of that file's headings; and the README.md at
# the top of the tree, when given, has at most 400 lines (the front door:
# what quota_sched is, the two commands, a short tour and links to doc/,
# which has the rest).  Prints one TAP line per check (the test command
# counts them) and the broken links; exits 1 if a check fails.
use strict;
use warnings;
use File::Basename qw(dirname);
use File::Spec;

# the anchors of a Markdown file's headings, as GitHub makes them
my %slug_cache;
sub slugs
{
	my ($path) = @_;
	return $slug_cache{$path} if $slug_cache{$path};
	my (%out, %seen);
	my $fence = 0;
	open(my $fh, '<:encoding(UTF-8)', $path) or die "$path: $!";
	while (my $line = <$fh>)
	{
		if ($line =~ /^\s*(```|~~~)/) { $fence = !$fence; next; }
		next if $fence;
		next unless $line =~ /^#{1,6}\s+(.*?)\s*#*\s*$/;
		my $text = $1;
		$text =~ s/\[([^\]]*)\]\([^)]*\)/$1/g;	# a link: its text
		my $s = lc($text);
		$s =~ s/^\s+|\s+$//g;
		$s =~ s/[^\w\- ]//g;					# punctuation goes
		$s =~ s/ /-/g;
		my $n = $seen{$s}++;
		$out{ $n ? "$s-$n" : $s } = 1;
	}
	close($fh);
	return $slug_cache{$path} = \%out;
}

my ($checked, @broken) = (0);
foreach my $md (@ARGV)
{
	my $fence = 0;
	open(my $fh, '<:encoding(UTF-8)', $md) or die "$md: $!";
	while (my $line = <$fh>)
	{
		my $no = $.;
		if ($line =~ /^\s*(```|~~~)/) { $fence = !$fence; next; }
		next if $fence;
		$line =~ s/`[^`]*`//g;				# no links inside code spans
		while ($line =~ /\]\(([^)\s]+)\)/g)
		{
			my $target = $1;
			next if $target =~ /^[a-z]+:/;
			my ($path, $anchor) = split /#/, $target, 2;
			my $file = $path ? File::Spec->canonpath(dirname($md) . "/$path") : $md;
			$checked++;
			if (!-e $file)
			{
				push @broken, "$md:$no: $target: no such file";
			}
			elsif (defined $anchor && $anchor ne ''
				&& ($file !~ /\.md$/ || !slugs($file)->{$anchor}))
			{
				push @broken, "$md:$no: $target: no such heading";
			}
		}
	}
	close($fh);
}
print "# $_\n" foreach @broken;
printf "%s 1 - the docs' %d relative links name files and headings that exist\n",
  @broken ? 'not ok' : 'ok', $checked;
my $failed = @broken ? 1 : 0;

# The README stays a front door: detail goes to doc/, linked.
my $readme_max = 400;
my ($readme) = grep { File::Spec->canonpath($_) eq 'README.md' } @ARGV;
if (defined $readme)
{
	open(my $fh, '<:encoding(UTF-8)', $readme) or die "$readme: $!";
	my $lines = 0;
	$lines++ while <$fh>;
	close($fh);
	if ($lines > $readme_max)
	{
		print "# README.md has $lines lines, more than $readme_max: move the detail "
		  . "to the page of doc/ it belongs to and link it\n";
		print "not ok 2 - README.md has at most $readme_max lines\n";
		$failed = 1;
	}
	else
	{
		print "ok 2 - README.md has at most $readme_max lines ($lines)\n";
	}
}

# The simulator names each of its checks after a section of scheduling.md 3
# (test/unit/sim.c's table of rules): each name is a heading there.
if (-f 'test/unit/sim.c' && -f 'doc/scheduling.md')
{
	my %heading;
	open(my $doc, '<', 'doc/scheduling.md') or die "doc/scheduling.md: $!";
	while (<$doc>)
	{
		next unless /^##+ (.*?)\s*$/;
		(my $h = $1) =~ s/^(\d+)\. /$1 /;    # "## 3. The pass" is rule "3 The pass"
		$heading{$h} = 1;
	}
	close $doc;
	open(my $sim, '<', 'test/unit/sim.c') or die "test/unit/sim.c: $!";
	my @missing;
	while (<$sim>)
	{
		push @missing, $1 if /^\t\{"(3[.0-9]* [^"]*)", Check_/ && !$heading{$1};
	}
	close $sim;
	if (@missing)
	{
		print "# test/unit/sim.c names a rule that is no heading of doc/scheduling.md: $_\n"
		  for @missing;
		print "not ok 3 - the simulator's rules are sections of scheduling.md\n";
		$failed = 1;
	}
	else
	{
		print "ok 3 - the simulator's rules are sections of scheduling.md\n";
	}
}
exit($failed);
