#!/usr/bin/perl
# Run a command (the arguments) as a child subreaper and write, to fd 3 when
# every process it started has ended, the CPU seconds of all of them:
# "cpu <user> <system> subreaper <1|0> adopted <n> killed <n> after <s>"
# (the seconds it waited, after the command ended, for what it left running).
#
# Why: a suite's processes that outlive their parent are reparented to init
# and waited for there, so their CPU time reaches neither bash's `times` nor
# /usr/bin/time: Chromium's zygote, renderers and utility processes (about
# half of a browser suite's CPU), a PostgreSQL cluster pg_ctl daemonized.
# With PR_SET_CHILD_SUBREAPER they are reparented here instead, waited for
# here, and counted in this process's RUSAGE_CHILDREN (`times`). Node cannot
# call prctl(2); Perl can (syscall), and perl-base is part of every Debian.
#
# When the command has ended, the processes it left running get
# LEVELKIT_SUBREAPER_LINGER seconds (5) to end, then are killed (and named
# on stderr): a suite that leaves a daemon behind would otherwise keep its
# CPU time unknown, or its run waiting forever.
# Where prctl is not there (not Linux, an unknown syscall number) the command
# runs as under bash: only the processes waited for count ("subreaper 0").
# The exit code is the command's (128 + the signal if it was killed).
use strict;
use warnings;
use POSIX qw(WNOHANG);
use Time::HiRes qw(sleep time);

open(my $report, '>&=', 3) or die "subreaper.pl: fd 3 is not open: $!\n";
my @command = @ARGV;
die "usage: subreaper.pl command [args...] 3>report\n" unless @command;
my $linger = $ENV{LEVELKIT_SUBREAPER_LINGER} // 5;

# prctl's syscall number per architecture (asm/unistd.h); PR_SET_CHILD_SUBREAPER is 36.
my %prctl = (x86_64 => 157, aarch64 => 167, i386 => 172, i486 => 172, i586 => 172, i686 => 172, armv7l => 172, armv6l => 172, ppc64le => 171, s390x => 172, riscv64 => 167);
my $machine = (POSIX::uname())[4];
my $subreaper = 0;
if ($^O eq 'linux' && exists $prctl{$machine}) {
  $subreaper = syscall($prctl{$machine}, 36, 1, 0, 0, 0) == 0 ? 1 : 0;
}

my $main = fork() // die "subreaper.pl: fork: $!\n";
if ($main == 0) {
  close($report);
  no warnings 'exec';
  exec { $command[0] } @command or do { print STDERR "subreaper.pl: $command[0]: $!\n"; POSIX::_exit(127) };
}

my $code;
my $adopted = 0;
my $reaped = sub {
  my ($pid, $status) = @_;
  if ($pid == $main) {
    $code = POSIX::WIFSIGNALED($status) ? 128 + POSIX::WTERMSIG($status) : POSIX::WEXITSTATUS($status);
  } else {
    $adopted++;
  }
};
# Until the command ends: every child, the command or an orphan adopted.
while (!defined $code) {
  my $pid = waitpid(-1, 0);
  last if $pid == -1;
  $reaped->($pid, $?);
}
# Then what it left running: a moment to end (Chromium's processes after
# its browser process), then killed.
my $killed = 0;
my $ended = time();
my $deadline = $ended + $linger;
while (1) {
  my $pid = waitpid(-1, WNOHANG);
  last if $pid == -1;
  if ($pid > 0) { $reaped->($pid, $?); next }
  if (time() < $deadline) { sleep(0.02); next }
  my @left = children();
  for my $child (@left) {
    print STDERR "subreaper.pl: killed $child->[0] ($child->[1]), still running $linger s after the suite ended\n";
    $killed++ if kill('KILL', $child->[0]);
  }
  # A killed process's own children come here next: give them their moment too.
  $deadline = time() + 1;
  sleep(0.02) unless @left;
}

my ($user, $system, $children_user, $children_system) = times();
printf $report "cpu %.2f %.2f subreaper %d adopted %d killed %d after %.1f\n", $children_user, $children_system, $subreaper, $adopted, $killed, time() - $ended;
close($report);
exit($code // 1);

# This process's running children (not the ended ones not yet waited for): [pid, command name] from /proc.
sub children {
  my @found;
  opendir(my $proc, '/proc') or return ();
  for my $pid (grep { /^\d+$/ } readdir($proc)) {
    open(my $stat, '<', "/proc/$pid/stat") or next;
    my $line = <$stat>;
    close($stat);
    # comm may hold spaces and parentheses: the state and ppid follow its last ')'.
    next unless defined $line && $line =~ /^\d+ \((.*)\) (\S) (\d+)/s;
    push @found, [$pid, $1] if $3 == $$ && $2 ne 'Z';
  }
  closedir($proc);
  return @found;
}
