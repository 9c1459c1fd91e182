"""Stand-in for ansible-test's pip bootstrap script (get-pip.py).

ansible-test downloads get-pip.py from a host outside the package registries
this project may reach, and fails without it. This script does the same job
from what is here: pip's bundled wheel (ensurepip), then `pip install` of the
exact packages ansible-test asked for (e.g. pip==24.2) from PyPI.
tools/run_ansible_test.py copies it to ~/.ansible/test/cache/get_pip_<ver>.py.
"""

import subprocess
import sys

# In a subprocess: ensurepip sets PIP_CONFIG_FILE=/dev/null in its own
# environment, which would hide the site's pip.conf (index, CA bundle) from
# the install below.
subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade"])
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install"] + args))
