# SPDX-License-Identifier: MIT
"""Run the FAST kernels once (for ``engine.warmup``), so none compiles on a live packet.

A small template set of every value class and operator decodes a few hand-made messages into
columns, from bytes (a read-only buffer) and from a writable array (numba compiles each), and
resets the dictionaries.
"""

import numpy as np

from engine.feeds.fast.columnar import ColumnDecoder
from engine.feeds.fast.templates import TemplateSet

_XML = """<templates>
  <template name="W" id="1">
    <uInt32 name="U" id="1"><copy/></uInt32>
    <int64 name="I" id="2"><delta/></int64>
    <decimal name="D" id="3" presence="optional"><copy/></decimal>
    <string name="S" id="4"><tail value="AB"/></string>
    <sequence name="Q"><length name="N" id="5"/><uInt64 name="V" id="6"/></sequence>
  </template>
</templates>"""

# pmap (template id, U, D, S present), id 1, U 7, I +1, D -1/5 (0.5), S "Z", one element, V 9
_MESSAGE = bytes([0xF8, 0x81, 0x87, 0x81, 0xFF, 0x85, 0xDA, 0x81, 0x89])


def warm_up() -> None:
    """Decode the warm-up messages; raise ``RuntimeError`` if a value differs."""
    decoder = ColumnDecoder(TemplateSet.from_xml(_XML, source="<fast warm-up>"))
    for data in (_MESSAGE * 2, np.frombuffer(_MESSAGE, np.uint8).copy()):
        cols = decoder.decode(data)
        decoder.reset()
        texts = [m.to_text() for m in cols.messages()]
        if texts[0] != "W=<U=7|I=1|D=0.5|S=AZ|Q=<V=9>>":
            raise RuntimeError(f"FAST warm-up decoded {texts[0]!r}")
