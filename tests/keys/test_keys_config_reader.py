

def test_settings_fallback_only_while_no_impl_mode_is_set():
    from opbuild.runtime import settings

    saved = settings._state["impl_mode"]
    try:
        settings.set_impl_mode(None)
        assert settings.resolve(None, None) == (settings.get_deterministic(), 1, True)
        assert settings.resolve(None, "high_performance")[1:] == (1, False)  # per call: explicit
        auto = settings.DP[0]
        settings.set_impl_mode("high_performance")
        assert settings.resolve(None, None)[1:] == (1, False) and settings.DP[0] != auto  # own cache code
        assert settings.impl_mode_is_set()
    finally:
        settings._state["impl_mode"] = saved
        settings._update()
