"""A TokenMonster vocabulary (its binary .vocab file), read as plain bytes: the text of each token
id. The layout is the one TokenMonster's own loaders read: a header (capcode, charset,
normalization, ...; 3-byte little-endian counts), then per token its length, its bytes, two flag
bytes, two alternatives, its id and a 4-byte score, then 256 begin-byte flags.

    read(data) -> Vocab | str   the tokens by id, or why `data` is not such a vocabulary
"""

from __future__ import annotations

import dataclasses

@dataclasses.dataclass(frozen=True)
class Vocab:
    capcode: int  # 0 none, 1 and 2: capitals written as marker bytes in the tokens' text
    charset: int  # 0 bytes, 1 UTF-8, 2 UTF-16
    tokens: tuple[bytes | None, ...]  # the text of each id (None for an id no token has)


def read(data: bytes) -> Vocab | str:
    if len(data) < 24 or data[0] > 2 or data[1] > 2:
        return "not a TokenMonster vocabulary (its header is not one)"

    def u24(at: int) -> int:
        return data[at] | data[at + 1] << 8 | data[at + 2] << 16

    size, count = u24(11), u24(17)
    at = 24
    tokens: list[bytes | None] = [None] * size
    for _ in range(count):
        if at >= len(data):
            return "not a TokenMonster vocabulary (its token list is cut short)"
        length = data[at]
        end = at + 1 + length + 2 + 9 + 4
        if end > len(data):
            return "not a TokenMonster vocabulary (its token list is cut short)"
        token_id = u24(at + 1 + length + 2 + 6)
        if token_id >= size:
            return f"not a TokenMonster vocabulary (token id {token_id} is past its {size} ids)"
        if tokens[token_id] is None:  # the first entry of an id is its text, as the loaders take it
            tokens[token_id] = data[at + 1:at + 1 + length]
        at = end
    if at + 256 > len(data):
        return "not a TokenMonster vocabulary (its begin-byte table is missing)"
    return Vocab(data[0], data[1], tuple(tokens))
