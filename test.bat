@echo off
rem Set everything up (first run only), then lint and run the whole test suite.
cd /d "%~dp0"
call scripts\setup.bat --dev || exit /b 1
set HF_HUB_OFFLINE=1
.venv\Scripts\python.exe -m ruff check . || exit /b 1
.venv\Scripts\python.exe -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder %*
