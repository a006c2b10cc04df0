# Install rocmdesk on distributions without a package (Fedora, Arch, openSUSE, ...).
#
#   sudo make install                 app in a private venv under $(PREFIX), helper, policy, menu entry,
#                                     the exporter's systemd unit (disabled) with rules and dashboard
#   sudo make install-helper          only the root helper and polkit policy (for a pipx install)
#   sudo make uninstall
#
# The helper path is fixed (/usr/libexec/rocmdesk/rocmdesk-helper) whatever PREFIX is: the polkit
# policy pins that path, and polkit only reads policies from /usr/share/polkit-1/actions.
PREFIX ?= /usr/local
PYTHON ?= python3
DESTDIR ?=
HELPER_DIR = /usr/libexec/rocmdesk
POLKIT_DIR = /usr/share/polkit-1/actions
POLICY = $(wildcard packaging/polkit/*.policy)

.PHONY: install install-app install-helper uninstall

install: install-app install-helper

install-app:
	$(PYTHON) -m venv $(DESTDIR)$(PREFIX)/lib/rocmdesk/venv
	$(DESTDIR)$(PREFIX)/lib/rocmdesk/venv/bin/pip install --quiet .
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/rocmdesk
	ln -sf $(PREFIX)/lib/rocmdesk/venv/bin/rocmdesk $(DESTDIR)$(PREFIX)/bin/rocmdesk
	rm -rf $(DESTDIR)$(PREFIX)/share/rocmdesk/resources
	cp -r resources $(DESTDIR)$(PREFIX)/share/rocmdesk/resources
	install -D -m 0644 packaging/org.rocmdesk.RocmDesk.desktop $(DESTDIR)$(PREFIX)/share/applications/org.rocmdesk.RocmDesk.desktop
	install -D -m 0644 packaging/org.rocmdesk.RocmDesk.metainfo.xml $(DESTDIR)$(PREFIX)/share/metainfo/org.rocmdesk.RocmDesk.metainfo.xml
	install -D -m 0644 resources/icons/rocmdesk.svg $(DESTDIR)$(PREFIX)/share/icons/hicolor/scalable/apps/rocmdesk.svg
	sed 's|^ExecStart=/usr/bin/rocmdesk|ExecStart=$(PREFIX)/bin/rocmdesk|' packaging/systemd/rocmdesk-exporter.service > rocmdesk-exporter.service.tmp
	install -D -m 0644 rocmdesk-exporter.service.tmp $(DESTDIR)/etc/systemd/system/rocmdesk-exporter.service
	rm -f rocmdesk-exporter.service.tmp
	for f in packaging/prometheus/*.yml packaging/grafana/*.json; do \
	  install -D -m 0644 $$f $(DESTDIR)$(PREFIX)/share/rocmdesk/$$(basename $$(dirname $$f))/$$(basename $$f); \
	done
	for png in resources/icons/hicolor/*/apps/rocmdesk.png; do \
	  size=$$(basename $$(dirname $$(dirname $$png))); \
	  install -D -m 0644 $$png $(DESTDIR)$(PREFIX)/share/icons/hicolor/$$size/apps/rocmdesk.png; \
	done

install-helper:
	install -D -o root -g root -m 0755 helper/rocmdesk-helper $(DESTDIR)$(HELPER_DIR)/rocmdesk-helper
	for p in $(POLICY); do install -D -m 0644 $$p $(DESTDIR)$(POLKIT_DIR)/$$(basename $$p); done
	install -d -m 0755 $(DESTDIR)/var/lib/rocmdesk
	install -d -m 0700 $(DESTDIR)/var/lib/rocmdesk/backups
	install -d -m 0750 $(DESTDIR)/var/log/rocmdesk

uninstall:
	rm -rf $(DESTDIR)$(PREFIX)/lib/rocmdesk $(DESTDIR)$(PREFIX)/share/rocmdesk
	rm -f $(DESTDIR)$(PREFIX)/bin/rocmdesk $(DESTDIR)/etc/systemd/system/rocmdesk-exporter.service
	rm -f $(DESTDIR)$(PREFIX)/share/applications/org.rocmdesk.RocmDesk.desktop
	rm -f $(DESTDIR)$(PREFIX)/share/metainfo/org.rocmdesk.RocmDesk.metainfo.xml
	rm -f $(DESTDIR)$(PREFIX)/share/icons/hicolor/*/apps/rocmdesk.png $(DESTDIR)$(PREFIX)/share/icons/hicolor/scalable/apps/rocmdesk.svg
	rm -f $(DESTDIR)$(HELPER_DIR)/rocmdesk-helper
	for p in $(POLICY); do rm -f $(DESTDIR)$(POLKIT_DIR)/$$(basename $$p); done
