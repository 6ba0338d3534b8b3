"""Lab tests of Kubeflow Trainer v2 on scheduler-plugins' second scheduler, sharing one lab (see conftest.py)."""
