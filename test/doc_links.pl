#!/usr/bin/perl
# test/doc_links.pl FILE.md...: every relative link [text](path#anchor) of
# the given Markdown files names a file that exists, and its anchor is the
# slug GitHub makes of one of that file's headings.  Prints one TAP line
# (the test command counts it) and the broken links; exits 1 if any.
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
exit(@broken ? 1 : 0);
