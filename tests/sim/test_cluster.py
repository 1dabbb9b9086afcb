"""Cluster specifications and presets."""

from __future__ import annotations

import pytest

from hetgym.sim import ClusterSpec, InvalidClusterError, Server, UnknownNameError, get_cluster, list_clusters


def test_presets_have_the_documented_inventories() -> None:
    assert get_cluster("tiny").capacity == {"v100": 4, "k80": 4}
    assert get_cluster("default").total_gpus == 64
    assert len(get_cluster("default").gpu_types) == 4
    assert get_cluster("gavel-108").capacity == {"v100": 36, "p100": 36, "k80": 36}
    assert get_cluster("large").total_gpus == 2048
    assert {"tiny", "default", "gavel-108", "large"} <= set(list_clusters())


def test_from_inventory_orders_types_and_servers() -> None:
    spec = ClusterSpec.from_inventory("x", {"a100": (1, 8), "k80": (3, 4)})
    assert spec.gpu_types == ("a100", "k80")
    assert spec.servers_by_type == {"a100": (0,), "k80": (1, 2, 3)}
    assert spec.max_gpus_per_server == {"a100": 8, "k80": 4}
    assert "k80: 3 servers x 4 GPUs = 12" in spec.describe()


def test_unknown_preset_suggests_the_nearest() -> None:
    with pytest.raises(UnknownNameError, match="did you mean 'default'"):
        get_cluster("defualt")


@pytest.mark.parametrize(
    ("servers", "match"),
    [
        ((), "no servers"),
        ((Server(1, "v100", 4),), "server_id 1"),
        ((Server(0, "v100", 0),), "num_gpus=0"),
        ((Server(0, "V100", 4),), "lower-case"),
    ],
)
def test_malformed_clusters_are_rejected(servers: tuple[Server, ...], match: str) -> None:
    with pytest.raises(InvalidClusterError, match=match):
        ClusterSpec("bad", servers)


def test_unknown_gpu_type_in_cluster_check() -> None:
    with pytest.raises(UnknownNameError, match="GPU type 'h100'"):
        get_cluster("tiny").check_gpu_type("h100")


def test_a_preset_is_built_once_and_rebuilt_when_its_name_is_registered_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from hetgym.sim import cluster as cluster_module

    monkeypatch.setattr(cluster_module, "_PRESETS", dict(cluster_module._PRESETS))
    monkeypatch.setattr(cluster_module, "_BUILT", {})
    first = get_cluster("tiny")
    assert get_cluster("tiny") is first
    assert first == ClusterSpec.from_inventory("tiny", {"v100": (2, 2), "k80": (2, 2)})
    cluster_module.register_cluster("tiny", lambda: ClusterSpec.from_inventory("tiny", {"a100": (1, 8)}))
    again = get_cluster("tiny")
    assert again is not first
    assert again.capacity == {"a100": 8}
    assert get_cluster("tiny") is again
