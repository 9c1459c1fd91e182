# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: run_lease
short_description: Take or release the cluster's gpupool run lease, so two runs never converge one cluster at once
version_added: "1.0.0"
description:
  - Two runs of C(playbooks/site.yml) on one cluster (an AWX job launched twice, two operators) would roll the same
    MIG waves and fight over the same objects. Each run first takes a C(coordination.k8s.io/v1) Lease (default
    C(kube-system/gpupool-run)) labelled C(app.kubernetes.io/managed-by=gpupool), and deletes it at the end.
  - "O(state=acquired): a free, released or expired lease is taken (C(holderIdentity) this run, C(renewTime) now); the
    write carries the C(resourceVersion) it was read at, so of two runs taking it at once exactly one wins. A lease
    this run holds is renewed. A lease another run holds fails the task, before any write, with the holder, when it
    took and last renewed the lease and when it expires; with O(wait) the task waits that long for it first."
  - "A run that is killed stops renewing: its lease expires after O(duration) seconds and the next run takes it.
    Every Kubernetes module given the returned C(lease) as its C(run_lease) option checks before its first request
    that its run still holds the lease and renews it once a third of O(duration) has passed, so a run whose lease
    expired and was taken over stops instead of writing."
  - "O(state=released) deletes the lease if this run holds it (with its C(resourceVersion) as precondition: a lease
    another run took over is left alone)."
  - In check mode nothing is written; the result says what a real run would do, and a lease held by another run
    still fails the task.
author:
  - gpupool.core developers (@gpupool)
options:
  state:
    description: Take (or renew) the lease, or release it.
    type: str
    choices: [acquired, released]
    default: acquired
  name:
    description: Name of the Lease.
    type: str
    default: gpupool-run
  namespace:
    description: Namespace of the Lease (it must exist).
    type: str
    default: kube-system
  holder:
    description:
      - Identity of this run. Default a new identity C(gpupool@<host>/<random>), returned as RV(holder); pass it back
        to renew or release.
    type: str
  duration:
    description:
      - Seconds the lease stays valid after each renewal (C(leaseDurationSeconds)). Every step renews it in the
        background a third of this apart (a failed renewal is tried again 2 seconds later), so it need not cover a
        step; a killed run blocks others at most this long, and an API server unreachable for longer than about two
        thirds of it stops the step that was writing (the next run finishes its work).
      - Before every write a step checks, by its own monotonic clock and without a request, that less than this has
        passed since its last renewal that reached the server; a run paused longer (SIGSTOP, a frozen VM) stops
        before writing, and a step never takes again a lease its run lost.
    type: int
    default: 30
  wait:
    description: Seconds to wait for a lease another run holds (0 fails at once).
    type: int
    default: 0
  wait_sleep:
    description: Seconds between two reads of the lease while waiting.
    type: float
    default: 5
extends_documentation_fragment:
  - gpupool.core.k8s_auth
  - gpupool.core.k8s_auth.lease
  - gpupool.core.k8s_auth.pools
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
  - gpupool.core.attributes.controller
  - gpupool.core.attributes.info
attributes:
  check_mode:
    details: Reads the lease and reports what a real run would do; never writes.
"""

EXAMPLES = r"""
- name: One gpupool run at a time on this cluster
  gpupool.core.run_lease:
    cluster: "{{ gpupool_cluster }}"
    wait: 600
  register: gpupool_run_lease

- name: Converge node labels under that lease
  gpupool.core.node_pool:
    cluster: "{{ gpupool_cluster }}"
    run_lease: "{{ gpupool_run_lease.lease }}"

- name: Release it
  gpupool.core.run_lease:
    cluster: "{{ gpupool_cluster }}"
    state: released
    holder: "{{ gpupool_run_lease.holder }}"
"""

RETURN = r"""
action:
  description: C(created), C(taken) (free or expired), C(renewed), C(released), C(not held), or C(would be ...) in
    check mode.
  returned: always
  type: str
  sample: created
holder:
  description: This run's holder identity.
  returned: always
  type: str
  sample: gpupool@awx-runner-7/3f9a1c2e
previous:
  description: The holder before this run took the lease (an expired run's identity), if any.
  returned: when O(state=acquired)
  type: str
lease:
  description: The lease as the other Kubernetes modules take it (their C(run_lease) option).
  returned: when O(state=acquired)
  type: dict
  sample: {name: gpupool-run, namespace: kube-system, holder: gpupool@awx-runner-7/3f9a1c2e, duration: 30}
waited:
  description: Seconds spent waiting for another run's lease.
  returned: when O(state=acquired)
  type: float
"""
