# QsRelease: the releases before the current version, for the tests that
# run them (006, 007, 023).  One library serves one schema
# (doc/releasing.md): a database of an earlier release is filled by that
# release's library, and updated by the current one, as an operator does.
#
#   - versions(): the version the sources make (quota_sched.control), the
#     release before it (sql/updates/PREVIOUS--CURRENT.sql) and every
#     release a database may update from (sql/released/);
#   - private_install(DIR): a copy of the PostgreSQL installation the tests
#     run (pg_config in PATH), whose quota_sched a test replaces at will
#     (PostgreSQL 15's installation is relocatable); returns its pg_config;
#   - install_release(VERSION, PG_CONFIG): builds that release from git
#     history, once a run (tmp_check/releases/VERSION: the last commit
#     whose quota_sched.control has that default_version), and installs it
#     there (make install);
#   - install_current(PG_CONFIG): make install of the tree under test there.
#
# make install writes the library in place: the server that has it loaded
# must be stopped first (a package manager's new file would not need it).
#
# The history: QS_GIT_DIR, else the git directory of the tree under test.
# Without it the tests fail at once, saying so (test/run passes
# QS_GIT_DIR to its copy of the tree, which has no .git).
package QsRelease;

use strict;
use warnings;
use Cwd;
use Exporter 'import';
use Fcntl qw(:flock);
use File::Basename;
use File::Path qw(make_path remove_tree);
use IPC::Run;
use PostgreSQL::Test::Utils;

our @EXPORT = qw(versions private_install install_release install_current release_bin);

my $top = $ENV{TESTDIR} // getcwd();

# run_logged(LOG, WHAT, CMD...): runs CMD, its output appended to LOG;
# dies with the end of LOG when it fails
sub run_logged
{
	my ($log, $what, @cmd) = @_;
	return if IPC::Run::run(\@cmd, '>>', $log, '2>>', $log);
	my @lines = split /\n/, slurp_file($log);
	die "$what failed (" . join(' ', @cmd) . "):\n"
	  . join("\n", @lines[ ($#lines > 30 ? $#lines - 30 : 0) .. $#lines ]) . "\n";
}

# versions(): (CURRENT, PREVIOUS, [every release a database updates from])
sub versions
{
	my ($current) = slurp_file("$top/quota_sched.control") =~ /^default_version = '([^']+)'$/m;
	my @steps = map { basename($_) =~ /^(.+)--\Q$current\E\.sql$/ ? $1 : () }
	  glob("$top/sql/updates/*--$current.sql");
	die "sql/updates/ has no one update to $current (" . scalar(@steps) . " found)"
	  unless @steps == 1;
	my %from = ($steps[0] => 1);
	foreach (glob("$top/sql/released/quota_sched--*--*.sql"))
	{
		$from{$1} = $from{$2} = 1 if basename($_) =~ /^quota_sched--(.+)--(.+)\.sql$/;
	}
	my @from = sort { version_cmp($a, $b) } grep { $_ ne $current } keys %from;
	return ($current, $steps[0], \@from);
}

sub version_cmp
{
	my @a = split /\./, $_[0];
	my @b = split /\./, $_[1];
	while (@a || @b)
	{
		my $c = (shift(@a) // -1) <=> (shift(@b) // -1);
		return $c if $c;
	}
	return 0;
}

# the git directory of the history, or a clear death
my $git_dir;
sub git
{
	my @args = @_;
	unless (defined $git_dir)
	{
		$git_dir = $ENV{QS_GIT_DIR};
		if (!$git_dir)
		{
			my ($out, $err) = ('', '');
			IPC::Run::run([ 'git', '-C', $top, 'rev-parse', '--absolute-git-dir' ], '>', \$out, '2>', \$err);
			chomp($git_dir = $out);
		}
		die "the earlier releases of quota_sched are built from its git history, which is not here"
		  . " ($top has no .git: a copy?).  Set QS_GIT_DIR to the repository's git directory"
		  . " (git rev-parse --absolute-git-dir in a checkout).\n"
		  unless $git_dir && -d $git_dir;
	}
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'git', "--git-dir=$git_dir", @args ], '>', \$out, '2>', \$err)
	  or die "git @args failed: $err";
	return $out;
}

# release_commit(VERSION): the last commit of the history whose
# quota_sched.control says default_version = VERSION (the parent of the
# commit that moved it on)
sub release_commit
{
	my ($version) = @_;
	foreach my $c (split /\n/, git('log', '--format=%H', '-G', 'default_version', '--',
			'quota_sched.control'))
	{
		my $control = eval { git('show', "$c^:quota_sched.control") } // next;
		if ($control =~ /^default_version = '\Q$version\E'$/m)
		{
			my $commit = git('rev-parse', "$c^");
			chomp $commit;
			return $commit;
		}
	}
	die "the git history has no release $version (no commit moves quota_sched.control's"
	  . " default_version on from '$version')\n";
}

sub pg_config_of
{
	my ($pg_config, $what) = @_;
	my $out = '';
	IPC::Run::run([ $pg_config, "--$what" ], '>', \$out) or die "$pg_config --$what failed";
	chomp $out;
	return $out;
}

# private_install(DIR): copies the PostgreSQL installation of the pg_config
# in PATH into DIR (its programs and libraries, shared files and headers,
# at the same places under DIR); returns DIR's pg_config
sub private_install
{
	my ($dir) = @_;
	my %pg = map { $_ => pg_config_of('pg_config', $_) } qw(bindir sharedir includedir);
	$pg{bindir} =~ m{^(.*)/lib/postgresql/([^/]+)/bin$}
	  or die "pg_config --bindir is $pg{bindir}, not PREFIX/lib/postgresql/MAJOR/bin";
	my ($prefix, $major) = ($1, $2);
	foreach my $path ("$prefix/lib/postgresql/$major", $pg{sharedir}, $pg{includedir})
	{
		die "$path is not under $prefix" unless index($path, "$prefix/") == 0;
		my $to = $dir . substr($path, length($prefix));
		make_path(dirname($to));
		run_logged("$dir.log", "copying $path", 'cp', '-a', $path, $to);
	}
	my $pg_config = $dir . substr($pg{bindir}, length($prefix)) . '/pg_config';
	die "the copy of PostgreSQL in $dir is not relocated: its sharedir is "
	  . pg_config_of($pg_config, 'sharedir')
	  unless index(pg_config_of($pg_config, 'sharedir'), "$dir/") == 0;
	return $pg_config;
}

# release_bin(PG_CONFIG): the installation's bindir (the server's programs,
# and the agent installed with quota_sched)
sub release_bin { return pg_config_of($_[0], 'bindir'); }

# build_release(VERSION, PG_CONFIG): the built sources of a release, made
# once a run (a lock lets two tests share them)
sub build_release
{
	my ($version, $pg_config) = @_;
	my $cache = "$top/tmp_check/releases";
	make_path($cache);
	open(my $lock, '>', "$cache/$version.lock") or die "$cache/$version.lock: $!";
	flock($lock, LOCK_EX) or die "flock: $!";
	my $src = "$cache/$version";
	unless (-e "$src/.built")
	{
		remove_tree($src);
		make_path($src);
		my $commit = release_commit($version);
		IPC::Run::run([ 'git', "--git-dir=$git_dir", 'archive', $commit ], '|',
			[ 'tar', '-C', $src, '-xf', '-' ])
		  or die "git archive $commit | tar -x failed";
		run_logged("$cache/$version.log", "building quota_sched $version ($commit)",
			'make', '-C', $src, '-j2', "PG_CONFIG=$pg_config");
		open(my $fh, '>', "$src/.built") or die "$src/.built: $!";
		close $fh;
	}
	close $lock;
	return $src;
}

# install_release(VERSION, PG_CONFIG): that release, into that installation
sub install_release
{
	my ($version, $pg_config) = @_;
	my $src = build_release($version, $pg_config);
	run_logged("$top/tmp_check/releases/$version.log", "installing quota_sched $version",
		'make', '-C', $src, 'install', "PG_CONFIG=$pg_config");
	return;
}

# install_current(PG_CONFIG): the tree under test, into that installation
sub install_current
{
	my ($pg_config) = @_;
	make_path("$top/tmp_check/releases");
	run_logged("$top/tmp_check/releases/current.log", 'installing the current build',
		'make', '-C', $top, 'install', "PG_CONFIG=$pg_config");
	return;
}

1;
