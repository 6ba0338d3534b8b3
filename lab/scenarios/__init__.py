"""Gang scheduling scenarios on the lab, with the real schedulers and no collection code.

Used by the lab's own tests and by ``python -m lab gang-demo``. The component manifests here are
the lab's own minimal ones (the collection's roles install the upstream charts); the images name
upstream repositories so the pod-process runner runs the matching binary from the Deployment.
"""

from __future__ import annotations

from .. import kube  # noqa: F401 - scenarios.kube, as before the split
from ._common import (  # noqa: F401
    KOORD_CRDS,
    KOORD_GANG_MIN,
    KOORD_GANG_NAME,
    KOORD_NAME,
    KOORD_NS,
    SP_NAME,
    SP_NS,
    VC_NS,
    crds,
    wait_crds_established,
    wait_deployment,
)
from .gangs import (  # noqa: F401
    gang,
    observe_gang,
)
from .koordinator import (  # noqa: F401
    install_koord_scheduler,
    koord_gang,
    koord_rbac,
    koord_scheduler,
)
from .operators import (  # noqa: F401
    MPI_NS,
    TO_NS,
    install_mpi_operator,
    install_training_operator,
    mpi_operator,
    mpijob,
    pytorchjob,
    tfjob,
    training_operator,
)
from .scheduler_plugins import (  # noqa: F401
    install_scheduler_plugins,
    restore_default_scheduler,
    scheduler_lease_holder,
    sp_default_scheduler,
    sp_rbac,
    sp_second_scheduler,
)
from .trainer import (  # noqa: F401
    HEALTH_PORT,
    JOBSET_NAME,
    JOBSET_NS,
    JOBSET_SECRET,
    JOBSET_SERVICE,
    JOBSET_WEBHOOKS,
    TRAINER_CRDS,
    TRAINER_NAME,
    TRAINER_NS,
    TRAINER_SECRET,
    TRAINER_WEBHOOKS,
    WEBHOOK_CERT_DIR,
    WEBHOOK_PORT,
    install_jobset,
    install_trainer,
    jobset_controller,
    jobset_rbac,
    jobset_webhooks,
    stock_training_runtime,
    trainer_controller,
    trainer_rbac,
    trainer_webhooks,
    training_runtime,
    trainjob,
    wait_service_endpoints,
)
from .volcano import (  # noqa: F401
    VC_CONF,
    install_volcano,
    install_volcano_crds,
    vc_queue_controller,
    vc_scheduler,
    vc_scheduler_rbac,
)
