// Package autorecover is one pass of the archive that drains itself after
// an outage: the loop that puts triage, recover's dry run and recover
// together, shared by `dla autorecover` and the dla-autorecover Lambda.
//
// A pass, in order:
//
//  1. scope: the sqs/ date folders of the last lookback days;
//  2. triage them, with the database's readiness;
//  3. choose the groups to try (Choose): transient groups, and fix-first
//     groups whose every record exists now; never permanent, unknown or
//     unreadable ones, and none whose backoff has not passed;
//  4. probe each chosen group with recover's rolled-back dry run of a few
//     of its objects: a probe that meets an environment error (the
//     database still refusing) makes the group wait (Backoff);
//  5. recover each group whose probe writes, with recover's own workflow,
//     within the pass's budgets (objects, deadline, attempts per object);
//  6. record the pass (one audit record; its state, PassState, is what the
//     next pass reads for the backoff: no memory between invocations);
//  7. notify, when a topic is set and something changed since the last
//     notification (Notification).
//
// This file's siblings hold the pure parts (choosing, the backoff, the
// report and the notification); nothing here reads or writes on its own.
package autorecover
