#!/usr/bin/env bash
# Remove the ballreader appliance; the record in /var/lib/ballreader stays unless --purge.
# Same options as install.sh (--root DIR, --purge).
exec "$(dirname "${BASH_SOURCE[0]}")/install.sh" --uninstall "$@"
