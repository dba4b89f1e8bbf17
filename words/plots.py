"""The live charts' titles, axes and traces (``plot.*``)."""

TEXTS = {
    "plot.step": ("step", "스텝"),
    "plot.loss": ("Loss", "손실"),
    "plot.loss_raw": ("loss", "손실"),
    "plot.loss_smooth": ("smoothed (EMA)", "평활 (EMA)"),
    "plot.grad": ("Gradient norm", "그라디언트 노름"),
    "plot.grad_before": ("before clipping", "클리핑 전"),
    "plot.grad_after": ("after clipping", "클리핑 후"),
    "plot.max_norm": ("max norm", "최대 노름"),
    "plot.lr": ("Learning rate", "학습률"),
    "plot.scale": ("fp16 loss scale", "fp16 손실 스케일"),
    "plot.skipped": ("skipped step", "건너뛴 스텝"),
    "plot.nonfinite": ("non-finite", "비유한값"),
    "plot.no_scale": ("no loss scaling (only with fp16)", "손실 스케일링 없음 (fp16에서만)"),
    "plot.no_data": ("no steps yet", "아직 스텝 없음"),
    "plot.dose": ("Dose = lr × steps × alpha/rank", "학습량 = 학습률 × 스텝 × alpha/rank"),
    "plot.count": ("pictures", "그림 수"),
    "plot.val_loss": ("Validation loss", "검증 손실"),
    "plot.val_best": ("lowest validation loss", "가장 낮은 검증 손실"),
    "plot.no_series": ("neither run has this", "두 실행 모두 이 값이 없습니다"),
}
