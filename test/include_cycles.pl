#!/usr/bin/perl
# test/include_cycles.pl FILE...: print each cycle of the include graph
# between modules, one per line ("a -> b -> a"); print nothing if there is
# none.  A module is a .c file and the .h of the same name (X_int.h, the
# internals of X, belongs to X); it depends on every module whose header
# one of its files includes.  Headers that are not among FILE are ignored.
use strict;
use warnings;

my (%edges, %known);
my @files = @ARGV;
for my $f (@files) {
	(my $m = $f) =~ s{.*/}{};
	$m =~ s/(_int)?\.[ch]$//;
	$known{$m} = 1;
}
for my $f (@files) {
	(my $m = $f) =~ s{.*/}{};
	$m =~ s/(_int)?\.[ch]$//;
	open my $fh, '<', $f or die "$f: $!\n";
	while (<$fh>) {
		next unless /^\s*#\s*include\s+"(?:.*\/)?([^"\/]+?)(?:_int)?\.h"/;
		$edges{$m}{$1} = 1 if $1 ne $m && $known{$1};
	}
	close $fh;
}

my (%state, @stack, %printed);
sub visit {
	my ($m) = @_;
	$state{$m} = 1;
	push @stack, $m;
	for my $to (sort keys %{ $edges{$m} || {} }) {
		my $s = $state{$to} // 0;
		if ($s == 1) {
			my ($at) = grep { $stack[$_] eq $to } 0 .. $#stack;
			my @cycle = @stack[$at .. $#stack];
			print join(' -> ', @cycle, $to), "\n"
				unless $printed{ join ' ', sort @cycle }++;
		} elsif ($s == 0) {
			visit($to);
		}
	}
	pop @stack;
	$state{$m} = 2;
}
visit($_) for sort keys %known;
