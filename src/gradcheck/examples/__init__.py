"""Example subjects for gradcheck: functions with known, hand-written gradients."""
