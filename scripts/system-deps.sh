#!/usr/bin/env bash
# Install the Debian packages the app and its tests need, when missing.
# As root it installs them; otherwise it prints the exact apt-get line to run.
set -euo pipefail

PACKAGES=(
  libportaudio2                                   # sounddevice (her fallback sound path)
  libpulse0                                       # her sound straight to PulseAudio/PipeWire (voice/sound/pulse.py)
  pulseaudio pulseaudio-utils libasound2-plugins  # private virtual sound card for tests
  espeak-ng sox                                   # test speech
  bubblewrap                                      # the kernel sandbox every command runs in
  libseccomp2 slirp4netns                         # its seccomp filter; the internet (only) for approved commands
  iproute2                                        # tests wire a stand-in internet (a veth into a network namespace)
  xvfb xauth libxcb-icccm4 libxcb-keysyms1 libxcb-cursor0 libxkbcommon-x11-0
  libegl1 libgl1 libxkbcommon0 libfontconfig1 libdbus-1-3  # Qt
  fonts-noto-color-emoji                          # emoji in the transcript
  dbus-daemon xdotool openbox xcompmgr            # desktop tests: a private session bus, keys into a real X server, a WM with a compositor
  desktop-file-utils                              # desktop-file-validate checks the launcher install-desktop writes
)

command -v dpkg-query >/dev/null 2>&1 || { echo "system-deps: not a Debian system; install PortAudio and PulseAudio yourself." >&2; exit 0; }

missing=()
for pkg in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -eq 0 ]]; then
  echo "system-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "system-deps: missing Debian packages. Run:" >&2
  echo "  sudo apt-get install -y ${missing[*]}" >&2
fi
