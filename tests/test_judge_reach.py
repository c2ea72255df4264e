"""An adversarial pass over the judge: everyday commands that reach past the work tree (or destroy
state no snapshot holds) ask under --yes; their near neighbours, and the commands of every day, run."""

import pytest

from amas_code import tools

ASK = {
    "outside": [
        "touch ~/.hushlogin",
        "mkdir -p ~/.config/foo",
        'mkdir -p "$HOME/.local/bin"',
        "touch ../x",
        "rmdir ../empty",
        "chmod 600 ~/.ssh/id_rsa",
        "chmod 777 /etc/passwd",
        "chown me ~/.ssh/config",
        "git config --global user.name x",
        "git config --global --unset-all user.name",
        "git config --system core.x y",
        "git config set --global user.name x",
        "git clone https://github.com/x/y ../y",
        "git init ~/newrepo",
        "git worktree add ../wt -b x",
        "git bundle create ../x.bundle --all",
        "ssh-copy-id host",
        "ssh-keygen -f ~/.ssh/x -N ''",
        "ssh-keygen -t ed25519",
        "ssh-keygen -R host",
        "gpg --import key.asc",
        "crontab -r",
        "crontab -e",
        "(crontab -l; echo '* * * * * x') | crontab -",
    ],
}
RUN = {
    "outside": [
        "mkdir -p build",
        "touch a.txt",
        "mkdir -p /tmp/x",
        "chmod +x scripts/run.sh",
        "git config user.name x",
        "git config --global user.name",
        "git config --global --get user.name",
        "git config --global --list",
        "git clone https://github.com/x/y",
        "git clone --depth 1 https://github.com/x/y /tmp/y",
        "git init",
        "git worktree add wt -b x",
        "ssh-keygen -t ed25519 -f ./deploy_key -N ''",
        "ssh-keygen -y -f key",
        "ssh-keygen -F github.com",
        "gpg --verify x.sig",
        "crontab -l | grep backup",
    ],
    "daily": [
        "pytest -q",
        "npm test",
        "git status",
        "git diff",
        "git log --oneline -5",
        "ls -la",
        "cat README.md",
        "grep -rn foo src",
        "sed -n '1,20p' app.py",
        "python script.py",
        "make -j4",
        "cargo build",
        "go test ./...",
        "pip install -e .",
        ".venv/bin/pip install -r requirements.txt",
        "uv pip install requests",
        "npm ci",
        "git add -A && git commit -m x",
        "git fetch && git pull",
        "git rebase main",
        "python -m venv .venv && . .venv/bin/activate",
    ],
}


@pytest.mark.parametrize("line", [line for lines in ASK.values() for line in lines])
def test_what_reaches_past_the_work_tree_asks(line):
    assert tools.destructive(line), line


@pytest.mark.parametrize("line", [line for lines in RUN.values() for line in lines])
def test_its_near_neighbours_and_the_commands_of_every_day_run(line):
    assert not tools.destructive(line), line
