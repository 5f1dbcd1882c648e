"""ArchSpec.content_id is computed once per spec and kept beside its fields: equal to the sha256 of the canonical
JSON recomputed, never part of equality, hashing, the dict form or a replaced spec's id."""

import copy
import hashlib
import pickle

from archstudy.sampling import ArchSpec, sample_spec

SPEC = ArchSpec(depth=5, width=12, d_in=40, d_out=3, activation="tanh", norm="batch")


def test_the_cached_id_is_the_hash_of_the_canonical_json_recomputed():
    spec = ArchSpec.from_dict(SPEC.to_dict())
    first = spec.content_id
    assert first == hashlib.sha256(spec.to_json().encode()).hexdigest()[:16]
    assert spec.content_id is first  # kept, not recomputed
    for i in range(20):
        drawn = sample_spec(3, i, 40, 3, "extended", 20_000)
        fresh = ArchSpec.from_dict(drawn.to_dict())
        assert drawn.content_id == hashlib.sha256(fresh.to_json().encode()).hexdigest()[:16] == fresh.content_id


def test_the_cache_is_no_field_and_follows_the_content():
    spec = ArchSpec.from_dict(SPEC.to_dict())
    untouched = ArchSpec.from_dict(SPEC.to_dict())
    _ = spec.content_id
    assert spec == untouched and hash(spec) == hash(untouched) and {spec, untouched} == {spec}
    assert spec.to_dict() == untouched.to_dict() and repr(spec) == repr(untouched)
    wider = spec.replace(width=13)  # a new spec: its own id, not the cached one
    assert wider.content_id != spec.content_id
    assert wider.content_id == ArchSpec.from_dict({**SPEC.to_dict(), "width": 13}).content_id
    for other in (pickle.loads(pickle.dumps(spec)), copy.deepcopy(spec), copy.copy(spec)):
        assert other == spec and other.content_id == untouched.content_id
