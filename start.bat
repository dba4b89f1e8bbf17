@echo off
rem Set everything up (first run only) and start LoRA Doctor on the built-in demo at http://127.0.0.1:7860
cd /d "%~dp0"
call scripts\setup.bat || exit /b 1
.venv\Scripts\python.exe app.py %*
