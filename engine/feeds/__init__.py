# SPDX-License-Identifier: MIT
"""Binary market data (issue 20): capture files and the exchanges' own feed protocols.

* :mod:`engine.feeds.pcap` — UDP datagrams out of pcap/pcapng captures (dpkt).
"""
